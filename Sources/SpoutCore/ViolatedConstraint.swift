/// What a unique or NOT NULL violation concerns, as the database reported it: enough for an
/// endpoint to tell which of its parameters a caller should change (``DatabaseError/violated``).
///
/// SQLite names the columns in its message (`UNIQUE constraint failed: pet.name`); PostgreSQL
/// names the column of a NOT NULL violation, but of a unique violation only the index (its
/// message's key is left out under row-level security), so ``columns`` is then empty and
/// ``index`` and ``schema`` say where to look the columns up in the catalog.
public struct ViolatedConstraint: Sendable, Hashable {
    /// The table's columns the constraint covers, in its order; empty when the database named
    /// none.
    public var columns: [String]
    /// PostgreSQL: the unique index (a `UNIQUE` or `PRIMARY KEY` constraint's own) that refused
    /// the row.
    public var index: String?
    /// PostgreSQL: the schema of the table, and so of ``index``.
    public var schema: String?

    public init(columns: [String], index: String? = nil, schema: String? = nil) {
        self.columns = columns
        self.index = index
        self.schema = schema
    }

    /// The columns of SQLite's message for a unique or NOT NULL violation
    /// (`UNIQUE constraint failed: pet.name`, `... failed: t.a, t.b`), without their table;
    /// nil for any other message (an index on an expression: `... failed: index 'i'`).
    public static func sqliteColumns(inMessage message: String) -> [String]? {
        let prefixes = ["UNIQUE constraint failed: ", "NOT NULL constraint failed: "]
        guard let prefix = prefixes.first(where: { message.hasPrefix($0) }) else { return nil }
        var columns: [String] = []
        for qualified in message.dropFirst(prefix.count).split(separator: ",", omittingEmptySubsequences: false) {
            let name = qualified.trimmingPrefix(" ")
            guard let dot = name.lastIndex(of: "."), !name.contains(" ") else { return nil }
            let column = name[name.index(after: dot)...]
            guard !column.isEmpty else { return nil }
            columns.append(String(column))
        }
        return columns.isEmpty ? nil : columns
    }
}
