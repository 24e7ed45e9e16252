import Foundation
import HTTPTypes
import SpoutCore
import Tracing

/// The span of one request when the server traces (``HTTPServer``'s `tracer`; #34), and the
/// way its producer adds child spans to it.
///
/// Contract:
/// - The request span is a server span named `METHOD` until a route answers, then
///   `METHOD /route/{template}` (OpenTelemetry's HTTP conventions); its parent is the span of
///   the request's valid `traceparent`, else it starts a trace. It carries the method, the route
///   template, the status code and the request id, never the path or the query: they hold
///   parameter values. A 5xx ends it with an error status.
/// - Children are started under it, now (``startChild(_:attributes:)``) or after the fact
///   (``recordChild(_:from:to:attributes:error:)``) from instants of `ContinuousClock`, which
///   is what the server's timings use.
/// - Every method may be called from any thread or task; a span not sampled records nothing.
public struct RequestSpan: Sendable {
    let tracer: any Tracer
    let span: any Span

    /// Starts the server span of a request whose head carries `fields`.
    init(tracer: any Tracer, method: String, fields: HTTPFields) {
        var parent = ServiceContext.topLevel
        tracer.extract(fields, into: &parent, using: HTTPFieldsExtractor())
        self.tracer = tracer
        self.span = tracer.startSpan(method, context: parent, ofKind: .server)
        self.span.attributes["http.request.method"] = method
    }

    /// The `traceparent` and `tracestate` the tracer would send onwards from this span: the
    /// span's ids as the tracer made them, for `traceresponse` and the access log.
    var propagated: (traceParent: String?, traceState: String?) {
        var carrier: [String: String] = [:]
        self.tracer.inject(self.span.context, into: &carrier, using: DictionaryInjector())
        return (carrier["traceparent"], carrier["tracestate"])
    }

    /// Whether the span records (the sampler kept it): spans of the work done for a request
    /// that is not recorded are not made at all.
    public var isRecording: Bool { self.span.isRecording }

    /// Names the span after the route that answers.
    func routed(method: String, template: String) {
        self.span.operationName = method + " " + template
        self.span.attributes["http.route"] = template
    }

    /// Ends the span with the response's status code (an error status from 500 on).
    func end(status: Int, requestID: String) {
        self.span.attributes["http.response.status_code"] = status
        self.span.attributes["spout.request.id"] = requestID
        if status >= 500 {
            self.span.attributes["error.type"] = String(status)
            self.span.setStatus(SpanStatus(code: .error))
        }
        self.span.end()
    }

    /// Ends the span of a request whose client went away before it was answered (mid-body):
    /// no status code; `spout.request.abandoned`, not an error of the server's.
    func abandon(requestID: String) {
        self.span.attributes["spout.request.id"] = requestID
        self.span.attributes["spout.request.abandoned"] = true
        self.span.end()
    }

    /// Starts a child span now; the caller ends it.
    public func startChild(_ name: String, attributes: SpanAttributes = [:]) -> any Span {
        let child = self.tracer.startSpan(name, context: self.span.context, ofKind: .internal)
        if !attributes.isEmpty { child.attributes = attributes }
        return child
    }

    /// Records a child span that ran from `start` to `end` (both read from `ContinuousClock`
    /// before now), with an error status when `error` is set (its type only, never its
    /// message, which may quote SQL).
    public func recordChild(
        _ name: String, from start: ContinuousClock.Instant, to end: ContinuousClock.Instant, attributes: SpanAttributes = [:],
        error: (any Error)? = nil
    ) {
        let clock = WallInstant.Converter()
        let child = self.tracer.startSpan(name, context: self.span.context, ofKind: .internal, at: clock.wall(start))
        if !attributes.isEmpty { child.attributes = attributes }
        if let error { RequestSpan.fail(child, with: error) }
        child.end(at: clock.wall(end))
    }

    /// Adds an event to the request's span (a cancelled statement, say).
    public func event(_ name: String) {
        self.span.addEvent(SpanEvent(name: name))
    }

    /// Marks `span` failed by `error`: an error status and `error.type`, a database error's
    /// code in snake case (`statement_timeout`, `cancelled`, `pool_exhausted`) or else the
    /// error's type name, never its message (a database's message may quote SQL or values).
    public static func fail(_ span: any Span, with error: any Error) {
        if let error = error as? DatabaseError {
            span.attributes["error.type"] = error.code.name.lowercased().replacingOccurrences(of: " ", with: "_")
        } else {
            span.attributes["error.type"] = String(describing: type(of: error))
        }
        span.setStatus(SpanStatus(code: .error))
    }
}

/// Instants since the Unix epoch, which spans are timed in, made from `ContinuousClock`'s.
enum WallInstant {
    /// Converts by one pair of readings of both clocks, taken when it is made.
    struct Converter {
        let wallNow = DefaultTracerClock.now
        let continuousNow = ContinuousClock.now

        func wall(_ instant: ContinuousClock.Instant) -> DefaultTracerClock.Timestamp {
            let back = self.continuousNow - instant
            let nanoseconds = back.components.seconds * 1_000_000_000 + back.components.attoseconds / 1_000_000_000
            let epoch = Int64(clamping: self.wallNow.nanosecondsSinceEpoch) - nanoseconds
            return DefaultTracerClock.Timestamp(nanosecondsSinceEpoch: UInt64(max(0, epoch)))
        }
    }
}

/// Reads trace context fields from a request head.
private struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from fields: HTTPFields) -> String? {
        HTTPField.Name(key).flatMap { fields[$0] }
    }
}

/// Writes trace context fields into a dictionary.
private struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        carrier[key] = value
    }
}
