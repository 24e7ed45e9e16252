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
struct RequestTrace: Sendable {
    /// This server's span: its trace id, span id, flags and state.
    let context: TraceContext
    /// The caller's span, when the request continued a trace.
    let parentSpanID: SpanID?
    /// The trace id, 32 lowercase hex digits.
    let traceID: String
    /// The span id, 16 lowercase hex digits.
    let spanID: String

    init(traceParent: String?, traceState: String?) {
        if let traceParent, let incoming = try? TraceContext(traceParentHeaderValue: traceParent, traceStateHeaderValue: traceState) {
            self.context = TraceContext(traceID: incoming.traceID, spanID: .random(), flags: incoming.flags, state: incoming.state)
            self.parentSpanID = incoming.spanID
        } else {
            self.context = TraceContext(traceID: .random(), spanID: .random(), flags: [], state: TraceState())
            self.parentSpanID = nil
        }
        // Written out once: the access log and the request both use them.
        self.traceID = self.context.traceID.description
        self.spanID = self.context.spanID.description
    }

    /// `<trace id>-<span id>`: the span as ``Request/traceContext`` hands it on.
    var ids: String { self.traceID + "-" + self.spanID }

    /// `00-<trace id>-<span id>-<flags>`: the value of `traceresponse` (and of the
    /// `traceparent` this server would send onwards).
    var headerValue: String { self.context.traceParentHeaderValue }
}
