import CSQLite3
import SpoutCore

extension SQLiteConnection {
    /// Steps the statement to its end, keeping every row it returns, and counts its changes
    /// as ``execute(_:_:)`` does (the rows an `INSERT`, `UPDATE` or `DELETE` changed, not a
    /// trigger's).
    public func executeReturning(_ sql: ParsedSQL, _ parameters: [SQLValue]) throws -> WriteAnswer {
        let changesBefore = sqlite3_total_changes64(self.handle)
        let cursor = try self.query(sql, parameters, options: QueryOptions())
        defer { cursor.close() }
        let columns = cursor.columns
        var rows: [[SQLValue]] = []
        while try cursor.next() {
            rows.append((0..<columns.count).map(cursor.value(at:)))
        }
        return WriteAnswer(changed: self.rowsChanged(since: changesBefore), rows: columns.isEmpty ? nil : QueryResult(columns: columns, rows: rows))
    }
}
