import NIOCore
import NIOPosix
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
                try await self.stream(rows, status: response.status, headers: response.headers)
            }
        } catch {
            self.onLoop { [exchange] in $0.sendFailure(exchange, error: error) }
        }
    }

    private func stream(_ rows: RowResult, status: Int, headers original: HeaderFields) async throws {
        guard let format = ContentNegotiation.format(accept: self.acceptHeader) else {
            throw HTTPError(status: 406, message: "not acceptable: ask for application/json, application/x-ndjson or text/csv")
        }
        var headers = original
        headers.replaceOrAdd("Content-Type", format.contentType)
        let exchange = self.exchange
        let waitStarted = ContinuousClock.now
        let lease = try await rows.database.lease(readOnly: rows.readOnly, onReplica: rows.onReplica)
        let acquire = ContinuousClock.now - waitStarted
        self.metrics?.acquiredConnection(database: lease.databaseName, after: acquire)
        if let result = await self.runEventDriven(rows, format: format, lease: lease) {
            if case .failure(let error) = result, rows.onReplica,
                rows.database.replicas?.reportFailure(on: lease, error: error) == true
            {
                // The replica went away under this request, before any byte was sent: the
                // replica is set aside and the primary answers instead.
                return try await self.stream(rows.onPrimary, status: status, headers: original)
            }
            let (body, count, database, encode) = try result.get()
            if self.timingHeader {
                headers.add("Server-Timing", ServerTiming.header([("acquire", acquire), ("db", database), ("encode", encode)]))
            }
            self.onLoop { [headers] in
                $0.sendResponse(exchange, status: status, headers: headers, body: body, contentType: nil, rows: count)
            }
            return
        }
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
        self.onLoop { [exchange, result] in $0.streamDone(exchange, sink: sink, result: result, timing: timing) }
    }

    /// Runs a single-row stream without a thread of its own when the lease's connection can
    /// (``EventDrivenConnection``: PostgreSQL, already open with the timeout the endpoint wants):
    /// the database is waited on by the driver's I/O thread, and the rows, held in memory, are
    /// encoded on this task's executor (the event loop) into the whole body and its row count.
    /// A client that goes away cancels the task, which cancels the statement. Nil when the
    /// stream cannot run so (including SQL that cannot be bound: the thread-pool path reports
    /// that error); the lease is then untouched.
    private func runEventDriven(
        _ rows: RowResult, format: OutputFormat, lease: ConnectionLease
    ) async -> Result<(body: [UInt8], rows: Int, database: Duration, encode: Duration), any Error>? {
        let timeout = rows.statementTimeout?.statementTimeoutMilliseconds
        guard let connection = lease.eventDrivenConnection(statementTimeout: timeout),
            let plan = try? SingleRowPlan(rows.stream, shape: rows.shape, format: format, dialect: connection.dialect)
        else { return nil }
        let result: Result<(body: [UInt8], rows: Int, database: Duration, encode: Duration), any Error>
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
            result = .success((body.bytes, count, encodeStarted - started, ContinuousClock.now - encodeStarted))
        } catch {
            result = .failure(error)
        }
        if connection.canRunEventDriven(readOnly: lease.readOnly, statementTimeout: nil) {
            lease.release()
        } else {
            // Returning it may take a round trip (a rollback) or closing it: off the loop, unless
            // the thread pool has shut down and did not run it.
            let released = (try? await self.threadPool.runIfActive { lease.release() }) != nil
            if !released { lease.release() }
        }
        return result
    }

    /// Runs the stream on a thread-pool thread, which blocks on the database and on the
    /// sink's backpressure, and releases the lease there. A client that goes away meanwhile
    /// cancels the statement, so the connection comes back soon.
    private func runOnThreadPool(
        _ rows: RowResult, format: OutputFormat, lease: ConnectionLease, sink: StreamingResponseSink
    ) async -> Result<Int, any Error> {
        let metrics = self.metrics
        sink.onClose {
            metrics?.cancelsSent.increment()
            lease.cancel()
        }
        let result: Result<Int, any Error>
        do {
            let configuration = rows.database.configuration
            let count = try await self.threadPool.runIfActive {
                defer {
                    sink.clearOnClose()
                    lease.release()
                }
                return try lease.withConnection { connection in
                    if let timeout = rows.statementTimeout {
                        try connection.setStatementTimeout(milliseconds: timeout.statementTimeoutMilliseconds)
                    }
                    // Read-only by the lease; a transaction only where it buys one snapshot.
                    let transaction = rows.readOnly && connection.dialect.readsInTransaction
                    if transaction { try connection.begin(readOnly: true) }
                    let count = try rows.stream.write(
                        as: format, shape: rows.shape, to: sink, on: connection,
                        dateFormat: configuration.dateFormat, attachmentBatchSize: configuration.attachmentBatchSize,
                        fetchSize: configuration.fetchSize
                    )
                    if transaction { try connection.commit() }
                    return count
                }
            }
            result = .success(count)
        } catch {
            // The pool may not have run the body (cancelled, shut down): release here too.
            sink.clearOnClose()
            lease.release()
            result = .failure(error)
        }
        return result
    }

    private func onLoop(_ body: @escaping @Sendable (HTTPConnectionHandler) -> Void) {
        let handler = self.handler
        self.hop.execute { body(handler.value) }
    }
}
