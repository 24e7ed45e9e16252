import Logging
import SpoutCore
import SpoutHTTP

extension RowResult {
    public func produce(status: Int, headers: HeaderFields, through exchange: ResponseExchange) async throws {
        // A stream counts against its client's stream cap (429) before it waits for anything.
        if !self.isSentWhole { try exchange.admitStream() }
        try await RowResponder(exchange: exchange).respond(self, status: status, headers: headers)
    }
}

/// Decides how a row request runs, and runs it: the one owner of that rule.
///
/// In order:
/// 1. Negotiates the format (`Accept`; 406 when nothing offered is acceptable).
/// 2. Leases a connection of the result's database (a replica's when the result allows one),
///    waiting without blocking a thread.
/// 3. With a version validator, reads the version first: a match with `If-None-Match` is a
///    304 and the rows are not read.
/// 4. A result sent whole (single rows, pages, body validators) is read into memory: by the
///    driver's event-driven path when the connection offers one
///    (``EventDrivenConnection``), else on a thread-pool thread. Its strong `ETag`, `Link` to
///    the next page and `Spout-Truncated` header are set from the body and how it ended.
/// 5. Anything else streams on a thread-pool thread into the exchange's sink, on a lease
///    counted against the pool's stream limit (``DatabaseConfiguration/streamReserve``). The
///    sink spools what a slow client cannot take yet, so the lease is released when the
///    database has answered, not when the client has read; only when the spool may not grow
///    does it block the thread (backpressure). A row limit is reported in a
///    `Spout-Truncated` trailer.
/// 6. When a replica fails before any byte was sent, the replica is set aside and the primary
///    answers the same request.
///
/// The statement timeout and transaction rules are Core's
/// (``DatabaseConnection/runRequest(statementTimeout:transaction:session:_:)``); the lease is released
/// before the response is reported done; a client that goes away cancels the statement
/// through the lease.
struct RowResponder: Sendable {
    let exchange: ResponseExchange

    /// The field that says whether an endpoint's `rowLimit` cut the result: a header on a
    /// response sent whole, a trailer (announced by `Trailer`) on a streamed one.
    static let truncatedField = "Spout-Truncated"

    func respond(_ rows: RowResult, status: Int, headers original: HeaderFields) async throws {
        guard let format = ContentNegotiation.format(accept: self.exchange.acceptHeader) else {
            throw ContentNegotiation.notAcceptable
        }
        var headers = original
        headers.replaceOrAdd("Content-Type", format.contentType)
        let waitStarted = ContinuousClock.now
        let lease = try await rows.database.lease(readOnly: rows.readOnly, onReplica: rows.onReplica, forStream: !rows.isSentWhole)
        let acquire = ContinuousClock.now - waitStarted
        self.exchange.connectionAcquired(database: lease.databaseName, after: acquire)

        if case .version(let version)? = rows.validator {
            switch await self.versionTag(version, of: rows, format: format, lease: lease) {
            case .success(let tag):
                headers.replaceOrAdd("ETag", tag.description)
                if tag.isMatched(byIfNoneMatch: self.exchange.ifNoneMatch) {
                    await self.release(lease)
                    return self.exchange.sendNotModified(headers)
                }
            case .failure(let error):
                if rows.onReplica, rows.database.replicas?.reportFailure(on: lease, error: error) == true {
                    await self.release(lease)
                    return try await self.respond(rows.onPrimary, status: status, headers: original)
                }
                // The rows are still right without a validator: answer them untagged.
                self.exchange.logger.warning(
                    "versionSql failed; answering without an ETag",
                    metadata: ["request.id": "\(self.exchange.request.id)", "error": "\(String(reflecting: error))"])
            }
        }

        if rows.isSentWhole {
            try await self.sendWhole(rows, status: status, headers: headers, original: original, format: format, lease: lease, acquire: acquire)
        } else {
            await self.stream(rows, status: status, headers: headers, format: format, lease: lease, acquire: acquire)
        }
    }

    // MARK: Sent whole

    /// A body read whole, with what the stream reported and how long reading (and encoding,
    /// when it was separate) took.
    private struct WholeBody: Sendable {
        var body: [UInt8]
        var outcome: StreamOutcome
        var database: Duration
        var encode: Duration?
    }

    private func sendWhole(
        _ rows: RowResult, status: Int, headers: HeaderFields, original: HeaderFields, format: OutputFormat, lease: ConnectionLease,
        acquire: Duration
    ) async throws {
        let result: Result<WholeBody, any Error>
        if let eventDriven = await self.runEventDriven(rows, format: format, lease: lease) {
            result = eventDriven
        } else {
            result = await self.runCollected(rows, format: format, lease: lease)
        }
        if case .failure(let error) = result, rows.onReplica,
            rows.database.replicas?.reportFailure(on: lease, error: error) == true
        {
            // The replica went away under this request, before any byte was sent: the
            // replica is set aside and the primary answers instead.
            return try await self.respond(rows.onPrimary, status: status, headers: original)
        }
        let whole = try result.get()
        var headers = headers
        if case .body? = rows.validator {
            let tag = EntityTag.strong(body: whole.body)
            headers.replaceOrAdd("ETag", tag.description)
            if tag.isMatched(byIfNoneMatch: self.exchange.ifNoneMatch) { return self.exchange.sendNotModified(headers) }
        }
        if let next = try rows.nextPage?(whole.outcome) { headers.add("Link", "<\(next)>; rel=\"next\"") }
        if rows.stream.rowLimit != nil && rows.nextPage == nil {
            headers.replaceOrAdd(Self.truncatedField, String(whole.outcome.truncated))
        }
        if self.exchange.timingHeader {
            headers.add(
                "Server-Timing",
                ServerTiming.header([("acquire", acquire), ("db", whole.database)] + (whole.encode.map { [("encode", $0)] } ?? [])))
        }
        self.exchange.send(status: status, headers: headers, body: whole.body, rows: whole.outcome.rows)
    }

    /// Runs a single-row stream without a thread of its own when the lease's connection can
    /// (``EventDrivenConnection``: PostgreSQL, already open with the timeout the endpoint wants):
    /// the database is waited on by the driver's I/O thread, and the rows, held in memory, are
    /// encoded on this task's executor (the event loop) into the whole body. A client that goes
    /// away cancels the task, which cancels the statement. Nil when the stream cannot run so
    /// (including SQL that cannot be bound: the thread-pool path reports that error); the lease
    /// is then untouched. Otherwise the lease is released.
    private func runEventDriven(_ rows: RowResult, format: OutputFormat, lease: ConnectionLease) async -> Result<WholeBody, any Error>? {
        let timeout = rows.statementTimeout?.statementTimeoutMilliseconds
        // A session (role, claims) needs the transaction the thread-pool path opens.
        guard rows.session == nil || rows.database.dialect != .postgres else { return nil }
        guard let connection = lease.eventDrivenConnection(statementTimeout: timeout),
            let plan = try? PipelinedSingleRowPlan(rows.stream, shape: rows.shape, format: format, children: connection.childQueries)
        else { return nil }
        let result: Result<WholeBody, any Error>
        do {
            let started = ContinuousClock.now
            let batches = try await withTaskCancellationHandler {
                try await connection.runEventDriven(plan.parent) { try plan.batch(after: $0) }
            } onCancel: { [exchange = self.exchange] in
                exchange.statementCancelled()
                lease.cancel()
            }
            let encodeStarted = ContinuousClock.now
            let body = CollectingSink()
            let count = try plan.write(batches, as: format, shape: rows.shape, dateFormat: rows.database.configuration.dateFormat, to: body)
            result = .success(
                WholeBody(
                    body: body.bytes, outcome: StreamOutcome(rows: count), database: encodeStarted - started,
                    encode: ContinuousClock.now - encodeStarted))
        } catch {
            result = .failure(error)
        }
        if connection.canRunEventDriven(readOnly: lease.readOnly, statementTimeout: nil) {
            lease.release()
        } else {
            await self.release(lease)
        }
        return result
    }

    /// Runs the stream on a thread-pool thread into memory (a result sent whole: bounded by
    /// its shape or its page size) and releases the lease. A client that goes away cancels the
    /// task, which cancels the statement.
    private func runCollected(_ rows: RowResult, format: OutputFormat, lease: ConnectionLease) async -> Result<WholeBody, any Error> {
        let started = ContinuousClock.now
        let result = await withTaskCancellationHandler {
            await self.runBlocking(rows, lease: lease) { connection, configuration in
                let body = CollectingSink()
                let outcome = try rows.stream.run(
                    as: format, shape: rows.shape, to: body, on: connection, dateFormat: configuration.dateFormat,
                    attachmentBatchSize: configuration.attachmentBatchSize, fetchSize: configuration.fetchSize)
                return (body.bytes, outcome)
            }
        } onCancel: { [exchange = self.exchange] in
            exchange.statementCancelled()
            lease.cancel()
        }
        return result.map { body, outcome in
            WholeBody(body: body, outcome: outcome, database: ContinuousClock.now - started, encode: nil)
        }
    }

    /// The weak tag of what `version` returns on the lease's connection (the lease is kept).
    private func versionTag(_ version: RowStream, of rows: RowResult, format: OutputFormat, lease: ConnectionLease) async -> Result<EntityTag, any Error> {
        let result = await self.runBlocking(rows, lease: lease, releasing: false) { connection, _ in
            let value = CollectingSink()
            do {
                try version.write(as: .json(), shape: .scalar, to: value, on: connection, dateFormat: .epochMilliseconds)
            } catch RowStreamError.noRow {
                // No row is a version too (an empty table's).
            }
            return value.bytes
        }
        return result.map { EntityTag.weak(digesting: [Array(format.contentType.utf8), $0]) }
    }

    // MARK: Streamed

    private func stream(
        _ rows: RowResult, status: Int, headers: HeaderFields, format: OutputFormat, lease: ConnectionLease, acquire: Duration
    ) async {
        var headers = headers
        // A row limit can only be reported after the last row: in a trailer, announced here.
        if rows.stream.rowLimit != nil { headers.replaceOrAdd("Trailer", Self.truncatedField) }
        let sink = self.exchange.startStream(status: status, headers: headers)
        let runStarted = ContinuousClock.now
        var result = await self.runOnThreadPool(rows, format: format, lease: lease, sink: sink)
        if case .failure(let error) = result, rows.onReplica,
            rows.database.replicas?.reportFailure(on: lease, error: error) == true, sink.isUntouched,
            let primary = try? await rows.database.lease(readOnly: rows.readOnly, forStream: true)
        {
            // The replica went away before the stream produced a byte: the replica is set
            // aside and the primary streams into the same, still empty sink.
            result = await self.runOnThreadPool(rows.onPrimary, format: format, lease: primary, sink: sink)
        }
        // Reading and encoding interleave on this path: one `db` figure covers both. The
        // leases are released by now.
        let held = ContinuousClock.now - runStarted
        self.exchange.streamHeldConnection(for: held)
        let timing = self.exchange.timingHeader ? ServerTiming.header([("acquire", acquire), ("db", held)]) : nil
        var trailers: HeaderFields? = nil
        if rows.stream.rowLimit != nil, case .success(let outcome) = result {
            trailers = [Self.truncatedField: String(outcome.truncated)]
        }
        self.exchange.finishStream(sink, result: result.map(\.rows), timing: timing, trailers: trailers)
    }

    /// Runs the stream on a thread-pool thread, which blocks on the database and on the
    /// sink's backpressure, and releases the lease there. A client that goes away meanwhile
    /// closes the sink, which cancels the statement, so the connection comes back soon.
    private func runOnThreadPool(
        _ rows: RowResult, format: OutputFormat, lease: ConnectionLease, sink: StreamingResponseSink
    ) async -> Result<StreamOutcome, any Error> {
        let exchange = self.exchange
        sink.onClose {
            exchange.statementCancelled()
            lease.cancel()
        }
        let result = await self.runBlocking(rows, lease: lease) { connection, configuration in
            try rows.stream.run(
                as: format, shape: rows.shape, to: sink, on: connection, dateFormat: configuration.dateFormat,
                attachmentBatchSize: configuration.attachmentBatchSize, fetchSize: configuration.fetchSize)
        }
        sink.clearOnClose()
        return result
    }

    // MARK: Leases

    /// Runs `body` on a thread-pool thread with the lease's connection set up for `rows` by
    /// ``DatabaseConnection/runRequest(statementTimeout:transaction:session:_:)`` (Core's rules), and
    /// releases the lease there unless `releasing` is false. The lease is released here too
    /// when the pool did not run the body (cancelled, shut down).
    private func runBlocking<Value: Sendable>(
        _ rows: RowResult, lease: ConnectionLease, releasing: Bool = true,
        _ body: @escaping @Sendable (any DatabaseConnection, DatabaseConfiguration) throws -> Value
    ) async -> Result<Value, any Error> {
        let configuration = rows.database.configuration
        do {
            return try await self.exchange.request.runBlocking {
                defer { if releasing { lease.release() } }
                return Result {
                    try lease.withConnection { connection in
                        try connection.runRequest(
                            statementTimeout: rows.statementTimeout, transaction: rows.readOnly ? .read : .none, session: rows.session
                        ) {
                            try body(connection, configuration)
                        }
                    }
                }
            }
        } catch {
            // The pool did not run the body (cancelled, shut down): the lease is still held.
            if releasing { lease.release() }
            return .failure(error)
        }
    }

    /// Releases `lease` off the event loop (returning it may take a round trip, a rollback,
    /// or closing it), unless the thread pool has shut down and did not run it.
    private func release(_ lease: ConnectionLease) async {
        let released = (try? await self.exchange.request.runBlocking { lease.release() }) != nil
        if !released { lease.release() }
    }
}
