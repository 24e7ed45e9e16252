import HTTPTypes
import SpoutCore
import Tracing
import W3CTraceContext

/// Where a request stands in a distributed trace (W3C Trace Context): this server's span of
/// it.
///
/// Contract: a request with a valid `traceparent` continues its trace: the same trace id,
/// flags (the caller's sampling decision) and `tracestate`, with a new span id for this
/// server, whose parent is the caller's span. Any other request (none sent, or malformed:
/// ignored, as the specification asks) starts a new trace, not sampled. The response's
/// `traceresponse` field (Trace Context Level 2) and the access log's `trace.id` and
/// `span.id` name this span, so a user can quote it and an operator can find it.
///
/// When the server traces (a tracer, #34), the span is the tracer's (``RequestSpan``): its ids
/// and flags are the ones the tracer made and exports, so the header, the log and the exported
/// span agree; the tracer's sampler decides the flags.
struct RequestTrace: Sendable {
    /// This server's span: its trace id, span id, flags and state.
    let context: TraceContext
    /// The trace id, 32 lowercase hex digits.
    let traceID: String
    /// The span id, 16 lowercase hex digits.
    let spanID: String
    /// `00-<trace id>-<span id>-<flags>`: the value of `traceresponse` (and of the
    /// `traceparent` this server would send onwards), as `TraceContext.traceParentHeaderValue`
    /// writes it, made from the digits above rather than writing the ids out again.
    let headerValue: String

    /// The tracer's span of the request; nil when the server does not trace.
    let span: RequestSpan?

    /// The trace of a request whose head carries `fields`; `tracer`: the server's, if it traces.
    init(fields: HTTPFields, method: String, tracer: (any Tracer)?) {
        let traceParent = fields[values: .traceParent].first
        let traceState = fields[values: .traceState].first
        let incoming = traceParent.flatMap { try? TraceContext(traceParentHeaderValue: $0, traceStateHeaderValue: traceState) }
        if let tracer {
            let span = RequestSpan(tracer: tracer, method: method, fields: fields)
            self.span = span
            let propagated = span.propagated
            if let traceParent = propagated.traceParent,
                let context = try? TraceContext(traceParentHeaderValue: traceParent, traceStateHeaderValue: propagated.traceState)
            {
                self.context = context
            } else {
                // A tracer that propagates no W3C context (configured so): ids of our own.
                self.context = Self.ownSpan(continuing: incoming)
            }
        } else {
            self.span = nil
            self.context = Self.ownSpan(continuing: incoming)
        }
        // Written out once: the access log, the response's header and the request use them.
        let traceDigits = self.context.traceID.hexBytes
        let spanDigits = self.context.spanID.hexBytes
        self.traceID = String(decoding: traceDigits, as: UTF8.self)
        self.spanID = String(decoding: spanDigits, as: UTF8.self)
        let flags = self.context.flags.rawValue
        self.headerValue = String(unsafeUninitializedCapacity: 55) { text in
            var end = 0
            func append(_ byte: UInt8) {
                text[end] = byte
                end += 1
            }
            append(UInt8(ascii: "0"))
            append(UInt8(ascii: "0"))
            append(UInt8(ascii: "-"))
            for digit in traceDigits { append(digit) }
            append(UInt8(ascii: "-"))
            for digit in spanDigits { append(digit) }
            append(UInt8(ascii: "-"))
            append(HexDigits.digit(flags >> 4))
            append(HexDigits.digit(flags & 0xF))
            return end
        }
    }

    /// A new span id in `incoming`'s trace (its flags and state), or a new trace, not sampled.
    /// The ids come from ``IdentifierGenerator``, without a system call each.
    private static func ownSpan(continuing incoming: TraceContext?) -> TraceContext {
        var generator = IdentifierGenerator()
        if let incoming {
            return TraceContext(traceID: incoming.traceID, spanID: .random(using: &generator), flags: incoming.flags, state: incoming.state)
        }
        return TraceContext(traceID: .random(using: &generator), spanID: .random(using: &generator), flags: [], state: TraceState())
    }

    /// `<trace id>-<span id>`: the span as ``Request/traceContext`` hands it on.
    var ids: String { self.traceID + "-" + self.spanID }
}
