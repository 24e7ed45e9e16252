import CSQLite3
import SpoutCore

/// SQLite checks a statement by compiling it (`sqlite3_prepare_v2`: unknown tables, columns
/// and functions are found then) and finalizing it unstepped. It does not share the
/// connection's statement cache: a statement checked at start is not kept.
extension SQLiteConnection: StatementChecking {
    public func describe(_ sql: ParsedSQL, bytesParameters: Set<String>, parameterTypes: Bool) throws -> StatementDescription {
        guard !self.isClosed else { throw DatabaseError(.connectionLost, message: "the SQLite connection is closed") }
        var statement: OpaquePointer?
        let result = sqlite3_prepare_v2(self.handle, sql.text, -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        guard result == SQLITE_OK else {
            let error = self.error(result, phase: .prepare)
            guard !error.code.isConnectionFailure else { throw error }
            let offset = sqlite3_error_offset(self.handle)
            throw StatementRefused(
                message: error.message, line: offset < 0 ? nil : StatementRefused.line(in: sql.text, byteOffset: Int(offset)))
        }
        guard let statement else { throw StatementRefused(message: "the SQL text holds no statement") }
        return StatementDescription(columns: SQLiteColumnTypes.columns(of: statement))
    }
}
