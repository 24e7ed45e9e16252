import SpoutCore

/// PostgreSQL names the constraint of every violation and its schema: the key columns of a
/// unique index (`pg_index.indkey`, up to its key attributes; empty when one is an
/// expression), and the `conkey` of a CHECK or foreign key on the reported table
/// (`pg_constraint`). One query.
extension PostgresConnection: ConstraintCatalogReading {
    public func violatedColumns(_ violated: ViolatedConstraint, writtenTable: String?, values: [String: SQLValue]) throws -> [String] {
        guard violated.columns.isEmpty, let schema = violated.schema else { return violated.columns }
        if let index = violated.index {
            let sql = try ParsedSQL.cached(Self.indexColumnsQuery, dialect: .postgres)
            return try self.columns(sql, ["index": .text(index), "schema": .text(schema)])
        }
        let kind: String
        let name: String
        if let check = violated.check {
            (kind, name) = ("c", check)
        } else if let foreignKey = violated.foreignKey {
            (kind, name) = ("f", foreignKey)
        } else {
            return []
        }
        guard let table = violated.table else { return [] }
        let sql = try ParsedSQL.cached(Self.constraintColumnsQuery, dialect: .postgres)
        return try self.columns(sql, ["kind": .text(kind), "name": .text(name), "table": .text(table), "schema": .text(schema)])
    }

    private func columns(_ sql: ParsedSQL, _ arguments: [String: SQLValue]) throws -> [String] {
        Self.texts(try self.queryAll([BoundStatement(sql, try sql.bind(arguments))]).first)
    }

    /// The key columns of index `:index` in `:schema`, in order; a NULL for an expression.
    private static let indexColumnsQuery = """
        SELECT a.attname::text
        FROM pg_index i
        JOIN pg_class c ON c.oid = i.indexrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, position)
        LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum AND k.attnum > 0
        WHERE c.relname = :index AND n.nspname = :schema AND k.position <= i.indnkeyatts
        ORDER BY k.position
        """

    /// The columns of constraint `:name` of kind `:kind` (`c` a CHECK, `f` a foreign key) on
    /// `:schema`.`:table`.
    private static let constraintColumnsQuery = """
        SELECT a.attname::text
        FROM pg_constraint c
        JOIN pg_class t ON t.oid = c.conrelid
        JOIN pg_namespace n ON n.oid = t.relnamespace
        JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
        WHERE c.contype = :kind AND c.conname = :name AND t.relname = :table AND n.nspname = :schema
        ORDER BY a.attnum
        """
}
