/// The SQL dialect of a database: among other things, the placeholder syntax ``ParsedSQL``
/// renders named parameters into. SQL text is read alike for both (``SQLLexer`` knows each
/// one's quoting, comments and casts); how child queries are batched is each driver's
/// ``ChildQueryStrategy``.
public enum SQLDialect: String, Sendable, Hashable, CaseIterable {
    /// PostgreSQL: placeholders `$1`, `$2`, ...
    case postgres
    /// SQLite: placeholders `?1`, `?2`, ...
    case sqlite

    /// Whether a read-only request reads inside an explicit transaction.
    ///
    /// SQLite: yes. The parent query and its attached children then read one snapshot, and a
    /// transaction costs nothing (no round trips). PostgreSQL: no. Under its default READ
    /// COMMITTED isolation every statement takes its own snapshot inside a transaction too,
    /// so `BEGIN` and `COMMIT` would only add two round trips; a read-only lease makes the
    /// session read-only instead (``DatabaseConnection/setReadOnly(_:)``), and a server-side
    /// cursor opens the transaction it needs itself.
    public var readsInTransaction: Bool {
        switch self {
        case .postgres: return false
        case .sqlite: return true
        }
    }

    /// A condition true when `expression` equals one element of the list parameter
    /// `:parameter`, bound as one ``SQLValue/array(_:)``: PostgreSQL `= ANY(...)` (an array),
    /// SQLite `IN (SELECT value FROM json_each(...))` (JSON array text). One parameter for any
    /// number of elements, so one statement text serves every list.
    public func membership(_ expression: String, inList parameter: String) -> String {
        switch self {
        case .postgres: return "\(expression) = ANY(:\(parameter))"
        case .sqlite: return "\(expression) IN (SELECT value FROM json_each(:\(parameter)))"
        }
    }

    /// The placeholder for the parameter numbered `number` (1-based).
    public func placeholder(_ number: Int) -> String {
        switch self {
        case .postgres: return "$\(number)"
        case .sqlite: return "?\(number)"
        }
    }
}
