/// A statement with optional clauses (``OptionalClauses``), parsed for one dialect: each
/// request gets the statement reduced for the arguments it gives, so the database plans
/// `last_name = $1` rather than `($1 IS NULL OR last_name = $1)`, and can use an index on
/// `last_name`.
///
/// Contract: ``statement(for:)`` returns a statement that answers exactly what the written SQL
/// answers for the same arguments (see ``OptionalClauses`` for why); it binds with the same
/// arguments (a parameter whose clause was dropped is simply not bound). Each combination of
/// choices is rendered and parsed once and kept (at most 3ⁿ for n clauses, n ≤
/// ``OptionalClauses/maximumCount``); drivers prepare each text once per connection.
public struct FilteredSQL: Sendable {
    /// The statement as written.
    public let written: ParsedSQL
    /// Its optional clauses (none: every request gets ``written``).
    public let clauses: OptionalClauses
    private let reduced: BoundedCache<[OptionalClauses.Choice], ParsedSQL>

    /// Parses `source` for `dialect` and finds its optional clauses. Throws
    /// ``SQLSyntaxError`` or ``OptionalClauseError``.
    public init(_ source: String, dialect: SQLDialect) throws {
        self.written = try ParsedSQL(source, dialect: dialect)
        self.clauses = try OptionalClauses(source)
        self.reduced = BoundedCache(capacity: 1024)
    }

    /// The statement to run for `arguments`.
    public func statement(for arguments: [String: SQLValue]) throws -> ParsedSQL {
        guard !self.clauses.clauses.isEmpty else { return self.written }
        let choices = self.clauses.choices(for: arguments)
        return try self.reduced.value(for: choices) {
            try ParsedSQL(self.clauses.rendered(choices), dialect: self.written.dialect)
        }
    }
}
