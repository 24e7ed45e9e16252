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
        // SQL that cannot be bound has no plan: the threads' path reports that error.
        guard let plan = try? PipelinedSingleRowPlan(stream, shape: shape, format: format, children: self.childQueries) else { return nil }
        let started = ContinuousClock.now
        roundTrips?.started(statements: plan.parent.statements.count + plan.parent.tentative.count)
        let batches = try await self.runEventDriven(plan.parent, session: session) { results in
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
