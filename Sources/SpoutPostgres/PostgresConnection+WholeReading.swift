import SpoutCore

/// PostgreSQL reads a single-row response (an object or a value, with flat attachments) as a
/// ``PipelinedSingleRowPlan`` run without a thread (``EventDrivenConnection``): the rows held
/// in memory, then encoded on the calling task. Anything else goes to the database's threads.
extension PostgresConnection: WholeReadingConnection {
    public func canReadWithoutThread(readOnly: Bool, statementTimeout milliseconds: Int?) -> Bool {
        self.canRunEventDriven(readOnly: readOnly, statementTimeout: milliseconds)
    }

    public func readWhole(
        _ stream: RowStream, shape: ResultShape, format: OutputFormat, dateFormat: DateFormat, session: RequestSession?,
        roundTrips: RoundTripLog?
    ) async throws -> WholeRead? {
        try await PostgresWholeRead.read(
            stream, shape: shape, format: format, dateFormat: dateFormat, children: self.childQueries, roundTrips: roundTrips
        ) { first, next in
            try await self.runEventDriven(first, session: session, then: next)
        }
    }
}

/// A single-row response read whole through pipelined batches, on a connection of its own or
/// a shared one: the one place the plan is made, run and encoded.
enum PostgresWholeRead {
    /// Plans `stream` (nil when it has no plan: nothing is run), runs the plan's batches with
    /// `run`, and encodes the rows held.
    static func read(
        _ stream: RowStream, shape: ResultShape, format: OutputFormat, dateFormat: DateFormat, children: any ChildQueryStrategy,
        roundTrips: RoundTripLog?,
        run: (StatementBatch, _ next: @escaping @Sendable ([[QueryResult]]) throws -> StatementBatch) async throws -> [[QueryResult]]
    ) async throws -> WholeRead? {
        // SQL that cannot be bound has no plan: the threads' path reports that error.
        guard let plan = try? PipelinedSingleRowPlan(stream, shape: shape, format: format, children: children) else { return nil }
        let started = ContinuousClock.now
        roundTrips?.started(statements: plan.parent.statements.count + plan.parent.tentative.count)
        let batches = try await run(plan.parent) { results in
            let next = try plan.batch(after: results)
            roundTrips?.ended(next: next.statements.count + next.tentative.count)
            return next
        }
        let encodeStarted = ContinuousClock.now
        let body = CollectingSink()
        let outcome = try plan.write(batches, as: format, shape: shape, dateFormat: dateFormat, to: body)
        return WholeRead(body: body.bytes, outcome: outcome, database: encodeStarted - started, encode: ContinuousClock.now - encodeStarted)
    }
}
