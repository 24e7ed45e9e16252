import CLibPQ
import SpoutCore

extension PostgresConnection {
    /// Runs `statements` and reads each result whole (not in single-row mode).
    ///
    /// One statement is sent and read as usual. Several are sent together in libpq pipeline
    /// mode, followed by one sync: one round trip for all of them. Outside a transaction the
    /// server runs them in one implicit transaction. When one fails, the server skips the
    /// rest (`PGRES_PIPELINE_ABORTED`), every pending result is read, pipeline mode is left,
    /// and the first error is thrown. Statements not yet prepared on this connection are
    /// prepared first, outside the pipeline (once per connection).
    public func queryAll(_ statements: [BoundStatement]) throws -> [QueryResult] {
        let handle = try self.idleHandle()
        let parameters = try statements.map { try PostgresTextParameters($0.parameters) }
        try self.openImplicitTransactionIfNeeded()
        let names = try statements.map { try self.preparedStatementName(for: $0.sql.text, handle: handle) }
        let pipelined = statements.count > 1
        if pipelined {
            guard PQenterPipelineMode(handle) == 1 else { throw self.makeError(nil) }
        }
        self.statementStarting()
        var sendError: DatabaseError?
        for (statement, (name, values)) in zip(statements, zip(names, parameters)) {
            self.statistics.recordStatement()
            if self.send(statement.sql.text, prepared: name, values, handle: handle) != 1 {
                sendError = self.makeError(nil)
                break
            }
        }
        if pipelined && sendError == nil && PQpipelineSync(handle) != 1 {
            sendError = self.makeError(nil)
        }
        if let sendError {
            // Nothing can be read back reliably after a failed send: give the connection up.
            self.markBroken()
            throw sendError
        }

        var results: [QueryResult] = []
        results.reserveCapacity(statements.count)
        var firstError: DatabaseError?
        for _ in statements {
            // libpq keeps single-row mode set by an earlier query for the first statement of a
            // pipeline (it is only reset when a query is sent outside pipeline mode), so rows
            // may also come one per `PGRES_SINGLE_TUPLE` result: all are collected.
            var collected: QueryResult?
            while let result = PQgetResult(handle) {
                switch PQresultStatus(result) {
                case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_SINGLE_TUPLE:
                    if firstError == nil { Self.decode(result, into: &collected) }
                case PGRES_PIPELINE_ABORTED:
                    if firstError == nil {
                        firstError = DatabaseError(.other, message: "skipped: an earlier statement of the pipeline failed")
                    }
                default:
                    if firstError == nil { firstError = self.makeError(result) }
                }
                PQclear(result)
            }
            if firstError == nil {
                guard let collected else {
                    firstError = DatabaseError(.other, message: "a statement of the pipeline returned no result")
                    continue
                }
                results.append(collected)
            }
        }
        if pipelined {
            self.finishPipeline(handle)
        }
        self.noteTransactionState()
        if let firstError { throw firstError }
        return results
    }

    /// Reads the pipeline's sync point and leaves pipeline mode; a connection where that fails
    /// is marked broken (the pool then discards it).
    private func finishPipeline(_ handle: OpaquePointer) {
        var synced = false
        while !synced, let result = PQgetResult(handle) {
            synced = PQresultStatus(result) == PGRES_PIPELINE_SYNC
            PQclear(result)
        }
        if !synced || PQexitPipelineMode(handle) != 1 {
            self.markBroken()
        }
    }

    /// Appends the rows of `result` to `collected` (created with its columns on first use),
    /// keeping at most `rowLimit` rows in all.
    static func decode(_ result: OpaquePointer, into collected: inout QueryResult?, rowLimit: Int? = nil) {
        if let rowLimit, let kept = collected?.rows.count, kept >= rowLimit { return }
        let description = PostgresResultDescription(result)
        var rows = collected?.rows ?? []
        let rowCount = min(PQntuples(result), Int32(clamping: max(0, (rowLimit ?? Int.max) - rows.count)))
        let width = description.decoders.count
        collected = nil
        rows.reserveCapacity(rows.count + Int(rowCount))
        for row in 0..<rowCount {
            var values: [SQLValue] = []
            values.reserveCapacity(width)
            for column in 0..<width {
                values.append(description.decoders[column].value(in: result, row: row, column: Int32(column)))
            }
            rows.append(values)
        }
        collected = QueryResult(columns: description.columns, rows: rows)
    }
}
