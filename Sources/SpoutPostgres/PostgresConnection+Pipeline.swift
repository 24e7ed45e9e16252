import CLibPQ
import SpoutCore

extension PostgresConnection {
    /// Runs `statements` and reads each result whole (not in single-row mode).
    ///
    /// The statements go together in libpq pipeline mode, with the prepares of those not yet
    /// prepared on this connection before them, followed by one sync: one round trip for all
    /// of them. Outside a transaction the server runs them in one implicit transaction. When
    /// one fails, the server skips the rest (`PGRES_PIPELINE_ABORTED`), every pending result is
    /// read, pipeline mode is left, and the first error is thrown. This is the event-driven
    /// path's pipeline (``PostgresEventDrivenRun``), run to its end on the calling thread.
    public func queryAll(_ statements: [BoundStatement]) throws -> [QueryResult] {
        let handle = try self.idleHandle()
        guard !statements.isEmpty else { return [] }
        try self.openImplicitTransactionIfNeeded()
        try self.obey(self.stateMachine.eventDrivenStarted())
        let run = PostgresEventDrivenRun(
            connection: self, handle: handle, first: StatementBatch(statements), next: { _ in StatementBatch([]) },
            completion: { _ in })
        return try run.runBlocking().get().first ?? []
    }

    /// Runs `statements`, transaction control and settings, in one pipeline: one round trip,
    /// their results dropped, not counted as statements (``SpoutCore/QueryStatistics``), and
    /// no transaction opened for them first. When one fails, the rest are skipped and its
    /// error is thrown.
    func runSettings(_ statements: [BoundStatement]) throws {
        let handle = try self.idleHandle()
        try self.obey(self.stateMachine.eventDrivenStarted())
        let run = PostgresEventDrivenRun(
            connection: self, handle: handle, first: StatementBatch([]), settings: statements,
            next: { _ in StatementBatch([]) }, completion: { _ in })
        _ = try run.runBlocking().get()
    }

    /// Appends the rows of `result` to `collected` (created with its columns on first use),
    /// keeping at most `rowLimit` rows in all.
    func decode(_ result: OpaquePointer, into collected: inout QueryResult?, rowLimit: Int? = nil) {
        if let rowLimit, let kept = collected?.rows.count, kept >= rowLimit { return }
        let description = self.resultDescriptions.description(of: result)
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
