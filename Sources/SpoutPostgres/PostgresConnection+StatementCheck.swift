import CLibPQ
import SpoutCore

/// PostgreSQL checks a statement by preparing it as the unnamed statement (`PQprepare`: parse
/// analysis, so unknown tables, columns and functions are found) and describing it
/// (`PQdescribePrepared`: its result columns and the parameters' types), never executing it.
/// Behind a transaction pooler (no session state) both run in a read-only transaction of their
/// own unless the caller has one, rolled back, so that the pooler keeps them on one server
/// connection. The unnamed statement is replaced by the next one sent unnamed, so nothing is
/// left to deallocate.
extension PostgresConnection: StatementChecking {
    /// `PG_DIAG_STATEMENT_POSITION`: the 1-based character the error points at.
    private static let positionField = Int32(UInt8(ascii: "P"))
    /// `PG_DIAG_MESSAGE_PRIMARY`: the message without severity, position or quoted SQL.
    private static let primaryMessageField = Int32(UInt8(ascii: "M"))

    public func describe(_ sql: ParsedSQL, bytesParameters: Set<String>, parameterTypes: Bool) throws -> StatementDescription {
        // Behind a transaction pooler the describe must reach the server the prepare did.
        let ownsTransaction = !self.keepsSessionState && !self.isInTransaction
        if ownsTransaction { try self.begin(readOnly: true) }
        defer { if ownsTransaction && self.isInTransaction { try? self.rollback() } }
        let handle = try self.idleHandle()
        let types = sql.parameterNames.map { bytesParameters.contains($0) ? PostgresTextParameters.byteaOID : 0 }
        self.statementStarting()
        let prepared = self.awaitingAnswer {
            types.withUnsafeBufferPointer { PQprepare(handle, "", sql.text, Int32($0.count), $0.baseAddress) }
        }
        defer { PQclear(prepared) }
        try self.check(prepared, of: sql)
        self.statementStarting()
        let described = self.awaitingAnswer { PQdescribePrepared(handle, "") }
        defer { PQclear(described) }
        try self.check(described, of: sql)
        self.noteTransactionState()
        guard let described else { return StatementDescription(columns: []) }
        let columns = PostgresResultDescription(described).columns
        guard parameterTypes else { return StatementDescription(columns: columns) }
        let oids = (0..<PQnparams(described)).map { PQparamtype(described, $0) }
        return StatementDescription(columns: columns, parameterTypes: try self.typeNames(oids))
    }

    /// Returns when `result` is a command's success; otherwise throws ``StatementRefused`` for
    /// an error about the statement, or the ``SpoutCore/DatabaseError`` of a failed connection.
    private func check(_ result: OpaquePointer?, of sql: ParsedSQL) throws {
        if let result, PQresultStatus(result) == PGRES_COMMAND_OK { return }
        let error = self.makeError(result)
        self.noteTransactionState()
        guard let result, !error.code.isConnectionFailure, PQresultStatus(result) == PGRES_FATAL_ERROR else { throw error }
        let message = PQresultErrorField(result, Self.primaryMessageField).map { String(cString: $0) } ?? error.message
        let line = PQresultErrorField(result, Self.positionField).flatMap { Int(String(cString: $0)) }.map {
            StatementRefused.line(in: sql.text, scalarOffset: $0 - 1)
        }
        throw StatementRefused(message: message, line: line)
    }

    /// The SQL names of the types `oids` (`format_type`: `integer`, `text[]`), in order.
    private func typeNames(_ oids: [Oid]) throws -> [String] {
        guard !oids.isEmpty else { return [] }
        let names = try ParsedSQL.cached(
            "SELECT format_type(t, NULL) FROM unnest(CAST(:oids AS oid[])) WITH ORDINALITY AS u(t, n) ORDER BY n", dialect: .postgres)
        let values = oids.map { SQLValue.integer(Int64($0)) }
        let rows = try self.queryAll([BoundStatement(names, try names.bind(["oids": .array(values)]))]).first?.rows ?? []
        return rows.map { row in
            if case .text(let name)? = row.first { return name }
            return ""
        }
    }
}
