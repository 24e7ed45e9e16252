import HTTPTypes
import SpoutCore
import SpoutHTTP
import Synchronization

/// A row response streamed into the exchange's sink (``RowResponder``, step 4).
extension RowResponder {
    private enum StreamAnswer: Sendable {
        case notModified(HTTPFields)
        case streamed(StreamingResponseSink, Result<StreamOutcome, any Error>, started: ContinuousClock.Instant)
    }

    func stream(
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
                try await session.runLast { connection in
                    try rows.stream.run(as: format, shape: rows.shape, to: sink, on: connection, configuration: configuration)
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
