import SpoutCore
import SpoutHTTP
import Synchronization
import Tracing

/// The spans of one response's database work, children of the request's span (#34): the one
/// place that names them and their attributes.
///
/// Spans, by OpenTelemetry's database conventions where they apply (`db.system.name`), never
/// with a statement's text or a parameter's value:
/// - `acquire`: the wait for a connection (`spout.database`: `primary`, `replica 1`), failed
///   when the pool timed out;
/// - `pipeline`: one round trip of a read without a thread (`spout.round_trip` 1, 2;
///   `db.operation.batch.size`: its statements), the parent row and, in the same or the next
///   round trip, its detail batches;
/// - `encode`: rows held in memory written as the response's body;
/// - `query`: statements read and encoded on the database's threads (interleaved);
/// - `stream`: a streamed response's statements, detail batches and encoding, into the sink
///   (`spout.rows`), until the database has answered (the spool may send the rest later);
/// - `version`: the statement of a version validator (`ETag`).
/// A failed or cancelled span has an error status and `error.type`.
///
/// Made only when the request has a span that records (one the sampler kept): an unsampled
/// request makes no child spans, not even non-recording ones. Every method is thread-safe.
struct DatabaseSpans: Sendable {
    let request: RequestSpan
    let system: String

    init?(_ request: RequestSpan?, database: Database) {
        guard let request, request.isRecording else { return nil }
        self.request = request
        self.system = database.dialect == .postgres ? "postgresql" : "sqlite"
    }

    /// Runs `body`, in a span `name` of `spans` (failed when it throws) when there are spans.
    static func measure<T>(_ spans: DatabaseSpans?, _ name: String, _ body: () async throws -> T) async throws -> T {
        guard let spans else { return try await body() }
        let span = spans.request.startChild(name, attributes: spans.attributes([:]))
        defer { span.end() }
        do {
            return try await body()
        } catch {
            RequestSpan.fail(span, with: error)
            throw error
        }
    }

    /// Records a span `name` that ran from `start` to `end`.
    func record(
        _ name: String, from start: ContinuousClock.Instant, to end: ContinuousClock.Instant, attributes extra: SpanAttributes = [:],
        error: (any Error)? = nil
    ) {
        self.request.recordChild(name, from: start, to: end, attributes: self.attributes(extra), error: error)
    }

    private func attributes(_ extra: SpanAttributes) -> SpanAttributes {
        var attributes = extra
        attributes["db.system.name"] = self.system
        return attributes
    }
}

extension DatabaseSpans {
    /// Records a read whole (``SpoutCore/DatabaseSession/readWhole(_:shape:format:roundTrips:)``)
    /// that started at `start`: a `pipeline` span per round trip and an `encode` span when the
    /// driver pipelined it (`log` heard its first round trip), else one `query` span.
    func recordWholeRead(_ log: RoundTripLog, from start: ContinuousClock.Instant, _ result: Result<WholeRead, any Error>) {
        guard let first = log.first else {
            switch result {
            case .success: self.record("query", from: start, to: .now)
            case .failure(let error): self.record("query", from: start, to: .now, error: error)
            }
            return
        }
        switch result {
        case .success(let read):
            let encodeStarted = start + read.database
            self.recordRoundTrips(log, first: first, from: start, to: encodeStarted, error: nil)
            self.record(
                "encode", from: encodeStarted, to: encodeStarted + (read.encode ?? .zero),
                attributes: ["spout.rows": .int(Int64(read.outcome.rows))])
        case .failure(let error):
            self.recordRoundTrips(log, first: first, from: start, to: .now, error: error)
        }
    }

    /// A `pipeline` span per round trip of `log`, the first of `first` statements from
    /// `start`; the last ends at `end` when the read failed before its driver noted the end.
    private func recordRoundTrips(
        _ log: RoundTripLog, first: Int, from start: ContinuousClock.Instant, to end: ContinuousClock.Instant, error: (any Error)?
    ) {
        var from = start
        var size = first
        var number = 1
        let shared = log.isShared
        for mark in log.marks {
            self.record("pipeline", from: from, to: mark.end, attributes: Self.roundTripAttributes(number, size, shared: shared))
            guard mark.next > 0 else { return }
            from = mark.end
            size = mark.next
            number += 1
        }
        // The round trip whose end the driver did not note: the read failed in it, or its
        // answer was the last.
        self.record("pipeline", from: from, to: end, attributes: Self.roundTripAttributes(number, size, shared: shared), error: error)
    }

    /// A round trip's attributes: its number, its statements and, on a shared connection,
    /// `spout.shared_connection`.
    private static func roundTripAttributes(_ number: Int, _ size: Int, shared: Bool) -> SpanAttributes {
        var attributes = SpanAttributes()
        if shared { attributes["spout.shared_connection"] = true }
        attributes["spout.round_trip"] = number
        attributes["db.operation.batch.size"] = size
        return attributes
    }
}
