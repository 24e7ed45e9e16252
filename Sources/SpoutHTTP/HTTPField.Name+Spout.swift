import HTTPTypes

/// The header fields Spout sends or reads that swift-http-types does not name.
///
/// A name keeps the spelling it is made with (`HTTPField.Name.rawName`), and that
/// spelling is what goes on the wire: these are spelled as Spout has always sent them.
extension HTTPField.Name {
    /// `X-Request-Id`: the id of a request (the client's, when it sent one), echoed in every
    /// response and logged as `request.id`.
    public static let requestID = HTTPField.Name("X-Request-Id")!
    /// `traceparent` (W3C Trace Context): the caller's trace and span (``RequestTrace``).
    public static let traceParent = HTTPField.Name("traceparent")!
    /// `tracestate` (W3C Trace Context): vendors' trace state, carried on with the trace.
    public static let traceState = HTTPField.Name("tracestate")!
    /// `traceresponse` (W3C Trace Context Level 2): this server's span of the request, in
    /// `traceparent` form, on every response.
    public static let traceResponse = HTTPField.Name("traceresponse")!
    /// `X-API-Key`: an API key, for a client that does not send it as `Authorization: Bearer`.
    public static let apiKey = HTTPField.Name("X-API-Key")!
    /// `Server-Timing`: where a row response's time went (``ServerConfiguration/timingHeader``).
    public static let serverTiming = HTTPField.Name("Server-Timing")!
    /// `Spout-Truncated`: whether an endpoint's `rowLimit` cut the result; a header on a
    /// response sent whole, a trailer on a streamed one.
    public static let spoutTruncated = HTTPField.Name("Spout-Truncated")!
    /// `Link` (RFC 8288): the next page of a result, `rel="next"`.
    public static let webLink = HTTPField.Name("Link")!
    /// `X-Forwarded-For`: the addresses proxies saw, believed only from
    /// ``ServerConfiguration/trustedProxies``.
    public static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
    /// `X-Accel-Buffering`: `no` tells nginx (whose `proxy_buffering` is on by default) to pass
    /// this response on as it arrives instead of holding it in its buffers.
    public static let accelBuffering = HTTPField.Name("X-Accel-Buffering")!
}
