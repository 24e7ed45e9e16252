/// The SQL dialect of a database: it decides the placeholder syntax and how attached child
/// queries are batched.
public enum SQLDialect: String, Sendable, Hashable, CaseIterable {
    /// PostgreSQL: placeholders `$1`, `$2`, ...
    case postgres
    /// SQLite: placeholders `?1`, `?2`, ...
    case sqlite

    /// The placeholder for the parameter numbered `number` (1-based).
    public func placeholder(_ number: Int) -> String {
        switch self {
        case .postgres: return "$\(number)"
        case .sqlite: return "?\(number)"
        }
    }
}
