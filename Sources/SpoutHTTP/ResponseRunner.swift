import NIOCore
import NIOPosix
import Logging
import SpoutCore

/// Runs a route handler for one exchange and turns its ``Response`` into writes on the
/// connection's event loop.
///
/// For a row stream it negotiates the format, leases a connection (waiting without blocking a
/// thread), runs the stream on the thread pool into a ``StreamingResponseSink`` (read-only when
/// asked: a read-only lease, and a read-only transaction where the dialect reads in one), and
/// releases the lease before reporting back. A client that goes away closes the sink, which
/// cancels the running statement through the lease.
struct ResponseRunner: Sendable {
    let handler: NIOLoopBound<HTTPConnectionHandler>
    let hop: LoopHop
    let exchange: Int
    let allocator: ByteBufferAllocator
    let threadPool: NIOThreadPool
    let acceptHeader: String?
    let chunksInFlight: Int
    var metrics: ServerMetrics? = nil
    /// Add `Server-Timing` to row responses sent whole (``ServerConfiguration/timingHeader``).
    var timingHeader = false
    /// Where a failed `versionSql` is reported, with the request's id.
    var logger: Logger? = nil
    var requestID = ""

    func run(route: Route, request: Request) async {
        do {
            let response = try await route.handler(request)
            switch response.body {
            case .empty:
                self.onLoop { [exchange] in
                    $0.sendResponse(exchange, status: response.status, headers: response.headers, body: [], contentType: nil)
                }
            case .bytes(let bytes, let contentType):
                self.onLoop { [exchange] in
                    $0.sendResponse(exchange, status: response.status, headers: response.headers, body: bytes, contentType: contentType)
                }
            case .rows(let rows):
                try await self.stream(
                    rows, status: response.status, headers: response.headers, ifNoneMatch: request.headers["If-None-Match"])
            }
        } catch {
            self.onLoop { [exchange] in $0.sendFailure(exchange, error: error) }
        }
    }

    private func stream(_ rows: RowResult, status: Int, headers original: HeaderFields, ifNoneMatch: String?) async throws {
        guard let format = ContentNegotiation.format(accept: self.acceptHeader) else {
            throw ContentNegotiation.notAcceptable
        }
        var headers = original
        headers.replaceOrAdd("Content-Type", format.contentType)
        let exchange = self.exchange
        let waitStarted = ContinuousClock.now
        let lease = try await rows.database.lease(readOnly: rows.readOnly, onReplica: rows.onReplica)
        let acquire = ContinuousClock.now - waitStarted
        self.metrics?.acquiredConnection(database: lease.databaseName, after: acquire)

        if case .version(let version)? = rows.validator {
            switch await self.versionTag(version, of: rows, format: format, lease: lease) {
            case .success(let tag):
                headers.replaceOrAdd("ETag", tag.description)
                if tag.isMatched(byIfNoneMatch: ifNoneMatch) {
                    await self.release(lease)
                    return self.notModified(headers)
                }
            case .failure(let error):
                if rows.onReplica, rows.database.replicas?.reportFailure(on: lease, error: error) == true {
                    await self.release(lease)
                    return try await self.stream(rows.onPrimary, status: status, headers: original, ifNoneMatch: ifNoneMatch)
                }
                // The rows are still right without a validator: answer them untagged.
                self.logger?.warning(
                    "versionSql failed; answering without an ETag",
                    metadata: ["request.id": "\(self.requestID)", "error": "\(String(reflecting: error))"])
            }
        }

        if rows.isSentWhole {
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
                return try await self.stream(rows.onPrimary, status: status, headers: original, ifNoneMatch: ifNoneMatch)
            }
            let whole = try result.get()
            if case .body? = rows.validator {
                let tag = EntityTag.strong(body: whole.body)
                headers.replaceOrAdd("ETag", tag.description)
                if tag.isMatched(byIfNoneMatch: ifNoneMatch) { return self.notModified(headers) }
            }
            if let next = try rows.nextPage?(whole.outcome) { headers.add("Link", "<\(next)>; rel=\"next\"") }
            if rows.stream.rowLimit != nil && rows.nextPage == nil {
                headers.replaceOrAdd(Self.truncatedField, String(whole.outcome.truncated))
            }
            if self.timingHeader {
                headers.add(
                    "Server-Timing",
                    ServerTiming.header([("acquire", acquire), ("db", whole.database)] + (whole.encode.map { [("encode", $0)] } ?? [])))
            }
            self.onLoop { [headers] in
                $0.sendResponse(exchange, status: status, headers: headers, body: whole.body, contentType: nil, rows: whole.outcome.rows)
            }
            return
        }

        // A row limit can only be reported after the last row: in a trailer, announced here.
        if rows.stream.rowLimit != nil { headers.replaceOrAdd("Trailer", Self.truncatedField) }
        let handler = self.handler
        let sink = StreamingResponseSink(allocator: self.allocator, hop: self.hop, maximumChunksInFlight: self.chunksInFlight) {
            chunk, isFirst in
            handler.value.streamChunk(exchange, chunk, isFirst: isFirst)
        }
        self.onLoop { [headers] in $0.attachSink(exchange, sink: sink, status: status, headers: headers) }
        let metrics = self.metrics
        metrics?.streamsInFlight.increment()
        let runStarted = ContinuousClock.now
        var result = await self.runOnThreadPool(rows, format: format, lease: lease, sink: sink)
        if case .failure(let error) = result, rows.onReplica,
            rows.database.replicas?.reportFailure(on: lease, error: error) == true,
            case let snapshot = sink.snapshot, snapshot.byteCount == 0, !snapshot.isClosed,
            let primary = try? await rows.database.lease(readOnly: rows.readOnly)
        {
            // The replica went away before the stream produced a byte: the replica is set
            // aside and the primary streams into the same, still empty sink.
            result = await self.runOnThreadPool(rows.onPrimary, format: format, lease: primary, sink: sink)
        }
        metrics?.streamsInFlight.decrement()
        // Reading and encoding interleave on this path: one `db` figure covers both.
        let timing = self.timingHeader ? ServerTiming.header([("acquire", acquire), ("db", ContinuousClock.now - runStarted)]) : nil
        var trailers: HeaderFields? = nil
        if rows.stream.rowLimit != nil, case .success(let outcome) = result {
            trailers = [Self.truncatedField: String(outcome.truncated)]
        }
        self.onLoop { [exchange, result, trailers] in
            $0.streamDone(exchange, sink: sink, result: result.map(\.rows), timing: timing, trailers: trailers)
        }
    }

    /// The field that says whether an endpoint's `rowLimit` cut the result: a header on a
    /// response sent whole, a trailer (announced by `Trailer`) on a streamed one.
    static let truncatedField = "Spout-Truncated"

    /// A body read whole, with what the stream reported and how long reading (and encoding,
    /// when it was separate) took.
    private struct WholeBody: Sendable {
        var body: [UInt8]
        var outcome: StreamOutcome
        var database: Duration
        var encode: Duration?
    }

    /// Answers 304 Not Modified with the validator and caching fields of `headers`.
    private func notModified(_ headers: HeaderFields) {
        let kept = HeaderFields(headers.filter { Self.notModifiedFields.contains($0.name.lowercased()) }.map { ($0.name, $0.value) })
        self.onLoop { [exchange] in $0.sendResponse(exchange, status: 304, headers: kept, body: [], contentType: nil) }
    }

    /// What a 304 repeats of the 200 it stands for (RFC 9110 §15.4.5).
    private static let notModifiedFields: Set<String> = ["etag", "cache-control", "vary", "expires", "content-location"]

    /// Runs a single-row stream without a thread of its own when the lease's connection can
    /// (``EventDrivenConnection``: PostgreSQL, already open with the timeout the endpoint wants):
    /// the database is waited on by the driver's I/O thread, and the rows, held in memory, are
    /// encoded on this task's executor (the event loop) into the whole body. A client that goes
    /// away cancels the task, which cancels the statement. Nil when the stream cannot run so
    /// (including SQL that cannot be bound: the thread-pool path reports that error); the lease
    /// is then untouched. Otherwise the lease is released.
    private func runEventDriven(_ rows: RowResult, format: OutputFormat, lease: ConnectionLease) async -> Result<WholeBody, any Error>? {
        let timeout = rows.statementTimeout?.statementTimeoutMilliseconds
        guard let connection = lease.eventDrivenConnection(statementTimeout: timeout),
            let plan = try? PipelinedSingleRowPlan(rows.stream, shape: rows.shape, format: format, children: connection.childQueries)
        else { return nil }
        let result: Result<WholeBody, any Error>
        do {
            let started = ContinuousClock.now
            let batches = try await withTaskCancellationHandler {
                try await connection.runEventDriven(plan.parent) { try plan.batch(after: $0) }
            } onCancel: { [metrics = self.metrics] in
                metrics?.cancelsSent.increment()
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
        } onCancel: { [metrics = self.metrics] in
            metrics?.cancelsSent.increment()
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

    /// Runs the stream on a thread-pool thread, which blocks on the database and on the
    /// sink's backpressure, and releases the lease there. A client that goes away meanwhile
    /// closes the sink, which cancels the statement, so the connection comes back soon.
    private func runOnThreadPool(
        _ rows: RowResult, format: OutputFormat, lease: ConnectionLease, sink: StreamingResponseSink
    ) async -> Result<StreamOutcome, any Error> {
        let metrics = self.metrics
        sink.onClose {
            metrics?.cancelsSent.increment()
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

    /// Runs `body` on a thread-pool thread with the lease's connection set up for `rows` by
    /// ``DatabaseConnection/runRequest(statementTimeout:transaction:_:)`` (Core's rules), and
    /// releases the lease there unless `releasing` is false. The lease is released here too
    /// when the pool did not run the body (cancelled, shut down).
    private func runBlocking<Value: Sendable>(
        _ rows: RowResult, lease: ConnectionLease, releasing: Bool = true,
        _ body: @escaping @Sendable (any DatabaseConnection, DatabaseConfiguration) throws -> Value
    ) async -> Result<Value, any Error> {
        do {
            let configuration = rows.database.configuration
            let outcome = try await self.threadPool.runIfActive {
                defer { if releasing { lease.release() } }
                return try lease.withConnection { connection in
                    try connection.runRequest(statementTimeout: rows.statementTimeout, transaction: rows.readOnly ? .read : .none) {
                        try body(connection, configuration)
                    }
                }
            }
            return .success(outcome)
        } catch {
            if releasing { lease.release() }
            return .failure(error)
        }
    }

    /// Releases `lease` off the event loop (returning it may take a round trip, a rollback,
    /// or closing it), unless the thread pool has shut down and did not run it.
    private func release(_ lease: ConnectionLease) async {
        let released = (try? await self.threadPool.runIfActive { lease.release() }) != nil
        if !released { lease.release() }
    }

    private func onLoop(_ body: @escaping @Sendable (HTTPConnectionHandler) -> Void) {
        let handler = self.handler
        self.hop.execute { body(handler.value) }
    }
}
