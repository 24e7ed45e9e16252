import SpoutCore

/// What several instances sharing one database use to set up the tables they share: whether a
/// table is there (`to_regclass`, which resolves the name as unquoted SQL does), and a
/// transaction advisory lock that makes their set-ups take turns.
extension PostgresConnection {
    /// `:table` → whether it names a table where unquoted SQL finds it.
    static let tableExistsQuery = "SELECT to_regclass(CAST(:table AS text)) IS NOT NULL"

    public func tableExists(_ name: String) throws -> Bool {
        let sql = try ParsedSQL.cached(Self.tableExistsQuery, dialect: .postgres)
        let row = try self.queryAll([BoundStatement(sql, try sql.bind(["table": .text(name)]))]).first?.rows.first
        return row?.first == .bool(true)
    }

    public func lockUntilTransactionEnds(_ key: Int64) throws {
        let sql = try ParsedSQL.cached("SELECT pg_advisory_xact_lock(CAST(:key AS bigint))", dialect: .postgres)
        _ = try self.queryAll([BoundStatement(sql, try sql.bind(["key": .integer(key)]))])
    }
}
