import HTTPTypes
import Logging
import SpoutCore
import SpoutHTTP
import Synchronization
import Tracing

extension RowResult {
    public func produce(status: HTTPResponse.Status, headers: HTTPFields, through exchange: ResponseExchange) async throws {
        // A stream counts against its client's stream cap (429) before it waits for anything.
        if !self.isSentWhole { try exchange.admitStream() }
        do {
            try await RowResponder(exchange: exchange).respond(self, status: status, headers: headers)
        } catch {
            throw UnrepresentableText.naming(error, arguments: self.stream.arguments)
        }
    }
}

/// Decides how a row request is answered, and answers it: the one owner of that rule. The
/// database work itself (lease, threads, timeout, transaction, role, cancellation, replica
/// failover, release) is one ``SpoutCore/Database/withSession(_:observer:retryOnPrimary:_:)``
/// call per response.
///
/// In order:
/// 1. Negotiates the format (`Accept`; 406 when nothing offered is acceptable): JSON, JSON
///    Lines or CSV, or the one type of a stored file (``RowResult/format``), checked once the
///    row is read when the row holds its type (``RowResult/mediaTypeColumn``). A stored file
///    goes with `nosniff` and a sandboxing `Content-Security-Policy`.
/// 2. With a version validator, reads the version first: a match with `If-None-Match` is a
///    304 and the rows are not read. A version that cannot be read leaves the response
///    untagged (logged), unless its replica is gone (then the primary answers all of it).
/// 3. A result sent whole (single rows, unless their details have details of their own
///    (``RowResult/streamsSingleRow``); pages; body validators) is read into memory: by the
///    driver's event-driven path when the connection offers one
///    (``SpoutCore/DatabaseSession/eventDrivenConnection()``), else on the database's
///    threads. Its strong `ETag`, `Link` to the next page and `Spout-Truncated` header are
///    set from the body and how it ended, and it is sent once the connection is released.
/// 4. Anything else streams on the database's threads into the exchange's sink, on a lease
///    counted against the pool's stream limit (``DatabaseConfiguration/streamReserve``). The
///    sink spools what a slow client cannot take yet, so the lease is released when the
///    database has answered, not when the client has read; only when the spool may not grow
///    does it block the thread (backpressure). A client that goes away closes the sink, which
///    cancels the statement. A row limit is reported in a `Spout-Truncated` trailer. A replica
///    that fails before the stream produced a byte is replaced by the primary, into the same
///    sink.
struct RowResponder: Sendable {
    let exchange: ResponseExchange

    func respond(_ rows: RowResult, status: HTTPResponse.Status, headers original: HTTPFields) async throws {
        let format: OutputFormat
        if let only = rows.format, rows.mediaTypeColumn != nil {
            // The row holds the type: `Accept` is checked once it is read.
            format = only
        } else if let only = rows.format {
            let essence = MediaType.essence(of: only.contentType)
            guard ContentNegotiation.format(accept: self.exchange.acceptHeader, offering: [(essence, only)]) != nil else {
                throw HTTPError(status: .notAcceptable, message: "not acceptable: this resource is \(essence)")
            }
            format = only
        } else {
            guard let negotiated = ContentNegotiation.format(accept: self.exchange.acceptHeader) else {
                throw ContentNegotiation.notAcceptable
            }
            format = negotiated
        }
        var headers = original
        headers.replaceOrAdd(.contentType, format.contentType)
        if case .raw = format {
            // A stored file is shown as what it is, and never runs as part of this origin: an
            // uploaded SVG or HTML opened in a browser runs no script, whatever its type says.
            headers.replaceOrAdd(.xContentTypeOptions, "nosniff")
            headers.replaceOrAdd(.contentSecurityPolicy, "default-src 'none'; style-src 'unsafe-inline'; sandbox")
        }
        let spans = DatabaseSpans(self.exchange.request.span, database: rows.database)
        let observer = AcquireWait(spans: spans)
        if rows.isSentWhole {
            try await self.sendWhole(rows, status: status, headers: headers, format: format, observer: observer, spans: spans)
        } else {
            try await self.stream(rows, status: status, headers: headers, format: format, observer: observer, spans: spans)
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

    private enum WholeAnswer: Sendable {
        case notModified(HTTPFields)
        case body(WholeBody, HTTPFields)
    }

    private func sendWhole(
        _ rows: RowResult, status: HTTPResponse.Status, headers: HTTPFields, format: OutputFormat, observer: AcquireWait,
        spans: DatabaseSpans?
    ) async throws {
        let answer = try await rows.database.withSession(rows.work, observer: observer) { session -> WholeAnswer in
            var headers = headers
            if case .version(let version)? = rows.validator,
                let tag = try await self.versionTag(version, format: format, session: session, spans: spans)
            {
                headers.replaceOrAdd(.eTag, tag.description)
                if tag.isMatched(byIfNoneMatch: self.exchange.ifNoneMatch) { return .notModified(headers) }
            }
            return .body(try await self.readWhole(rows, format: format, session: session, spans: spans), headers)
        }
        // The connection is back in its pool by now.
        switch answer {
        case .notModified(let headers):
            self.exchange.sendNotModified(headers)
        case .body(let whole, var headers):
            var storedType: String?
            if rows.mediaTypeColumn != nil {
                let type = self.storedMediaType(whole.outcome.lastKey.first, declared: format.contentType)
                let essence = MediaType.essence(of: type)
                guard ContentNegotiation.format(accept: self.exchange.acceptHeader, offering: [(essence, format)]) != nil else {
                    throw HTTPError(status: .notAcceptable, message: "not acceptable: this resource is \(essence)")
                }
                headers.replaceOrAdd(.contentType, type)
                storedType = type
            }
            if case .body? = rows.validator {
                let tag = storedType.map { EntityTag.strong(digesting: [Array($0.utf8), whole.body]) } ?? EntityTag.strong(body: whole.body)
                headers.replaceOrAdd(.eTag, tag.description)
                if tag.isMatched(byIfNoneMatch: self.exchange.ifNoneMatch) { return self.exchange.sendNotModified(headers) }
            }
            if let next = try rows.nextPage?(whole.outcome) { headers.append(HTTPField(name: .webLink, value: "<\(next)>; rel=\"next\"")) }
            if rows.stream.rowLimit != nil && rows.nextPage == nil {
                headers.replaceOrAdd(.spoutTruncated, String(whole.outcome.truncated))
            }
            if self.exchange.timingHeader {
                let parts = [("acquire", observer.acquire), ("db", whole.database)] + (whole.encode.map { [("encode", $0)] } ?? [])
                headers.append(HTTPField(name: .serverTiming, value: ServerTiming.header(parts)))
            }
            self.exchange.send(status: status, headers: headers, body: whole.body, rows: whole.outcome.rows)
        }
    }

    /// The `Content-Type` of a stored file whose row holds its type (``RowResult/mediaTypeColumn``):
    /// the stored text when it is a media type within `declared` (the endpoint's range), the
    /// declared type itself when the row holds none and it is one type, and
    /// `application/octet-stream` otherwise, so a stored type can never make a browser run what
    /// the endpoint did not mean to serve (logged).
    private func storedMediaType(_ value: SQLValue?, declared: String) -> String {
        let fallback = declared.contains("*") ? "application/octet-stream" : declared
        guard case .text(let stored)? = value, !stored.isEmpty else { return fallback }
        if EndpointFileParser.isMediaType(stored), MediaType.isWithin(stored, range: declared) { return stored }
        self.exchange.logger.warning(
            "a stored media type is not within the endpoint's mediaType; sent as application/octet-stream",
            metadata: ["request.id": "\(self.exchange.request.id)", "stored": "\(stored)", "mediaType": "\(declared)"])
        return "application/octet-stream"
    }

    /// Reads `rows` whole: without a thread of its own when the connection can
    /// (``SpoutCore/EventDrivenConnection``: PostgreSQL, already open with the timeout the
    /// endpoint wants), the database waited on by the driver's I/O thread and the rows, held in
    /// memory, encoded on this task's executor; else on the database's threads. A client that
    /// goes away cancels the task, which cancels the statement.
    private func readWhole(_ rows: RowResult, format: OutputFormat, session: DatabaseSession, spans: DatabaseSpans?) async throws -> WholeBody {
        let started = ContinuousClock.now
        // SQL that cannot be bound has no plan: the threads' path reports that error.
        if let connection = session.eventDrivenConnection(),
            let plan = try? PipelinedSingleRowPlan(rows.stream, shape: rows.shape, format: format, children: connection.childQueries)
        {
            let roundTrips = spans.map { _ in RoundTrips() }
            let firstSize = plan.parent.statements.count + plan.parent.tentative.count
            let batches: [[QueryResult]]
            do {
                batches = try await withTaskCancellationHandler {
                    try await session.runEventDriven(on: connection, plan.parent) { results in
                        let next = try plan.batch(after: results)
                        roundTrips?.ended(next: next.statements.count + next.tentative.count)
                        return next
                    }
                } onCancel: {
                    session.cancel()
                }
            } catch {
                if let spans { roundTrips?.record(into: spans, first: firstSize, from: started, to: .now, error: error) }
                throw error
            }
            let encodeStarted = ContinuousClock.now
            if let spans { roundTrips?.record(into: spans, first: firstSize, from: started, to: encodeStarted, error: nil) }
            let body = CollectingSink()
            let outcome = try plan.write(batches, as: format, shape: rows.shape, dateFormat: session.configuration.dateFormat, to: body)
            let encoded = ContinuousClock.now
            spans?.record("encode", from: encodeStarted, to: encoded, attributes: ["spout.rows": .int(Int64(outcome.rows))])
            return WholeBody(body: body.bytes, outcome: outcome, database: encodeStarted - started, encode: encoded - encodeStarted)
        }
        let configuration = session.configuration
        let run = {
            try await session.run { connection in
                let body = CollectingSink()
                let outcome = try rows.run(as: format, to: body, on: connection, configuration: configuration)
                return (body.bytes, outcome)
            }
        }
        let (body, outcome) = try await DatabaseSpans.measure(spans, "query", run)
        return WholeBody(body: body, outcome: outcome, database: ContinuousClock.now - started, encode: nil)
    }

    /// The weak tag of what `version` returns, or nil when it cannot be read (logged; the rows
    /// are still right without a validator). Throws only when the replica it ran on is gone.
    private func versionTag(
        _ version: RowStream, format: OutputFormat, session: DatabaseSession, spans: DatabaseSpans?
    ) async throws -> EntityTag? {
        do {
            let read = {
                try await session.run { connection in
                    let value = CollectingSink()
                    do {
                        try version.write(as: .json(), shape: .scalar, to: value, on: connection, dateFormat: .epochMilliseconds)
                    } catch RowStreamError.noRow {
                        // No row is a version too (an empty table's).
                    }
                    return value.bytes
                }
            }
            let value = try await DatabaseSpans.measure(spans, "version", read)
            return EntityTag.weak(digesting: [Array(format.contentType.utf8), value])
        } catch where session.failsOver(error) {
            throw error
        } catch {
            self.exchange.logger.warning(
                "versionSql failed; answering without an ETag",
                metadata: ["request.id": "\(self.exchange.request.id)", "error": "\(String(reflecting: error))"])
            return nil
        }
    }

    // MARK: Streamed

    private enum StreamAnswer: Sendable {
        case notModified(HTTPFields)
        case streamed(StreamingResponseSink, Result<StreamOutcome, any Error>, started: ContinuousClock.Instant)
    }

    private func stream(
        _ rows: RowResult, status: HTTPResponse.Status, headers: HTTPFields, format: OutputFormat, observer: AcquireWait,
        spans: DatabaseSpans?
    ) async throws {
        // One sink over every attempt: a primary that replaces a failed replica streams into
        // the sink the replica left untouched.
        let started = Mutex<(sink: StreamingResponseSink, at: ContinuousClock.Instant)?>(nil)
        let answer: StreamAnswer
        do {
            answer = try await rows.database.withSession(
                rows.work, observer: observer, retryOnPrimary: { started.withLock { $0?.sink.isUntouched ?? true } }
            ) { session -> StreamAnswer in
                var headers = headers
                let existing = started.withLock { $0 }
                if existing == nil, case .version(let version)? = rows.validator,
                    let tag = try await self.versionTag(version, format: format, session: session, spans: spans)
                {
                    headers.replaceOrAdd(.eTag, tag.description)
                    if tag.isMatched(byIfNoneMatch: self.exchange.ifNoneMatch) { return .notModified(headers) }
                }
                let (sink, at) = existing ?? self.startStream(rows, status: status, headers: headers, into: started)
                let result = await self.run(rows, format: format, session: session, sink: sink, spans: spans)
                if case .failure(let error) = result, session.failsOver(error), sink.isUntouched { throw error }
                return .streamed(sink, result, started: at)
            }
        } catch {
            // Failed before the stream started (no connection, say): an error response. After,
            // the sink ends the response.
            guard let (sink, at) = started.withLock({ $0 }) else { throw error }
            answer = .streamed(sink, .failure(error), started: at)
        }
        switch answer {
        case .notModified(let headers):
            self.exchange.sendNotModified(headers, streamed: true)
        case .streamed(let sink, let result, let at):
            // Reading and encoding interleave on this path: one `db` figure covers both. The
            // connection is back in its pool by now.
            let held = ContinuousClock.now - at
            let timing = self.exchange.timingHeader ? ServerTiming.header([("acquire", observer.acquire), ("db", held)]) : nil
            var trailers: HTTPFields? = nil
            if rows.stream.rowLimit != nil, case .success(let outcome) = result {
                trailers = [.spoutTruncated: String(outcome.truncated)]
            }
            // An error before the first chunk is still answered with a status, naming the
            // argument it can be traced to.
            let ended = result.map(\.rows).mapError { UnrepresentableText.naming($0, arguments: rows.stream.arguments) }
            self.exchange.finishStream(sink, result: ended, timing: timing, trailers: trailers)
        }
    }

    /// Starts the streamed response (its head goes out with the first chunk) and records it in
    /// `started`.
    private func startStream(
        _ rows: RowResult, status: HTTPResponse.Status, headers: HTTPFields,
        into started: borrowing Mutex<(sink: StreamingResponseSink, at: ContinuousClock.Instant)?>
    ) -> (StreamingResponseSink, ContinuousClock.Instant) {
        var headers = headers
        // A row limit can only be reported after the last row: in a trailer, announced here.
        if rows.stream.rowLimit != nil { headers.replaceOrAdd(.trailer, HTTPField.Name.spoutTruncated.rawName) }
        let sink = self.exchange.startStream(status: status, headers: headers)
        let at = ContinuousClock.now
        started.withLock { $0 = (sink, at) }
        return (sink, at)
    }

    /// Runs the stream on the database's threads, which block on the database and on the
    /// sink's backpressure. A client that goes away meanwhile closes the sink, which cancels
    /// the statement, so the connection comes back soon.
    private func run(
        _ rows: RowResult, format: OutputFormat, session: DatabaseSession, sink: StreamingResponseSink, spans: DatabaseSpans?
    ) async -> Result<StreamOutcome, any Error> {
        sink.onClose { session.cancel() }
        defer { sink.clearOnClose() }
        let configuration = session.configuration
        let started = ContinuousClock.now
        let result: Result<StreamOutcome, any Error>
        do {
            result = .success(
                try await session.run { connection in
                    try rows.run(as: format, to: sink, on: connection, configuration: configuration)
                })
        } catch {
            result = .failure(error)
        }
        if let spans {
            switch result {
            case .success(let outcome): spans.record("stream", from: started, to: .now, attributes: ["spout.rows": .int(Int64(outcome.rows))])
            case .failure(let error): spans.record("stream", from: started, to: .now, error: error)
            }
        }
        return result
    }
}

/// Keeps how long the response's last lease waited, for `Server-Timing` (the databases'
/// metrics hear it from the database's own observer), and records the `acquire` span and a
/// cancel when the request is traced.
private final class AcquireWait: DatabaseObserver {
    private let waited = Mutex<Duration>(.zero)
    private let spans: DatabaseSpans?
    /// When the first lease was asked for (a timed-out wait's span starts here).
    private let created = ContinuousClock.now

    init(spans: DatabaseSpans?) {
        self.spans = spans
    }

    /// How long the last lease waited.
    var acquire: Duration { self.waited.withLock { $0 } }

    func connectionAcquired(database: String, after wait: Duration) {
        self.waited.withLock { $0 = wait }
        if let spans = self.spans {
            let now = ContinuousClock.now
            spans.record("acquire", from: now - wait, to: now, attributes: ["spout.database": .string(database)])
        }
    }

    func acquireTimedOut(database: String) {
        self.spans?.record(
            "acquire", from: self.created, to: .now, attributes: ["spout.database": .string(database)],
            error: DatabaseError(.poolExhausted))
    }

    func statementCancelled() {
        self.spans?.request.event("statement cancelled")
    }
}

extension RowResult {
    /// Runs the stream on `connection` (blocking) into `sink`, in the result's shape, with the
    /// date format, attachment window and fetch size of `configuration` (the database's the
    /// request was asked of, also when a replica answers).
    fileprivate func run(
        as format: OutputFormat, to sink: any ByteSink, on connection: any DatabaseConnection, configuration: DatabaseConfiguration
    ) throws -> StreamOutcome {
        try self.stream.run(
            as: format, shape: self.shape, to: sink, on: connection, dateFormat: configuration.dateFormat,
            attachmentBatchSize: configuration.attachmentBatchSize, fetchSize: configuration.fetchSize)
    }
}
