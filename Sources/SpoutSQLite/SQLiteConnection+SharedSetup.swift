import SpoutCore

/// What several instances sharing one database file use to set up the tables they share:
/// whether a table is there (names compared without case, as SQLite does), and no lock of its
/// own, since SQLite's write transactions already take turns.
extension SQLiteConnection {
    public func tableExists(_ name: String) throws -> Bool {
        let sql = try ParsedSQL.cached("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = :table COLLATE NOCASE", dialect: .sqlite)
        let row = try self.queryAll([BoundStatement(sql, try sql.bind(["table": .text(name)]))]).first?.rows.first
        if case .integer(let count)? = row?.first { return count > 0 }
        return false
    }

    public func lockUntilTransactionEnds(_ key: Int64) throws {}
}
