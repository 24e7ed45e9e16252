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
    /// The table the constraint belongs to, when the database named it (a trigger's write to
    /// another table fails on that table's constraint).
    public var table: String?
    /// A CHECK constraint: PostgreSQL's constraint name; SQLite's report of it, its name or its
    /// expression as written (`color IN ('red','blue')`), which names no table.
    public var check: String?
    /// A foreign key: PostgreSQL's constraint name; SQLite names none (`FOREIGN KEY constraint
    /// failed`), so this is empty there.
    public var foreignKey: String?

    public init(
        columns: [String], index: String? = nil, schema: String? = nil, table: String? = nil, check: String? = nil,
        foreignKey: String? = nil
    ) {
        self.columns = columns
        self.index = index
        self.schema = schema
        self.table = table
        self.check = check
        self.foreignKey = foreignKey
    }

    /// The table and columns of SQLite's message for a unique or NOT NULL violation
    /// (`UNIQUE constraint failed: pet.name`, `... failed: t.a, t.b`), the CHECK it reports
    /// (`CHECK constraint failed: a_small`), or a foreign key without a name (`FOREIGN KEY
    /// constraint failed`); nil for any other message (an index on an expression: `... failed:
    /// index 'i'`).
    public static func sqlite(message: String) -> ViolatedConstraint? {
        if message == "FOREIGN KEY constraint failed" { return ViolatedConstraint(columns: [], foreignKey: "") }
        let checkPrefix = "CHECK constraint failed: "
        if message.hasPrefix(checkPrefix) {
            let check = String(message.dropFirst(checkPrefix.count))
            return check.isEmpty ? nil : ViolatedConstraint(columns: [], check: check)
        }
        let prefixes = ["UNIQUE constraint failed: ", "NOT NULL constraint failed: "]
        guard let prefix = prefixes.first(where: { message.hasPrefix($0) }) else { return nil }
        var table: Substring?
        var columns: [String] = []
        for qualified in message.dropFirst(prefix.count).split(separator: ",", omittingEmptySubsequences: false) {
            let name = qualified.trimmingPrefix(" ")
            guard !name.contains(" ") else { return nil }
            let parts = name.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count >= 2, let column = parts.last, !column.isEmpty else { return nil }
            let owner = parts[parts.count - 2]
            guard table == nil || table == owner else { return nil }
            table = owner
            columns.append(String(column))
        }
        guard let table, !columns.isEmpty else { return nil }
        return ViolatedConstraint(columns: columns, table: String(table))
    }
}
