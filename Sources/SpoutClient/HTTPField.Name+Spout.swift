import HTTPTypes

/// The header fields the client reads that swift-http-types does not name.
extension HTTPField.Name {
    /// `Link` (RFC 8288): Spout's `rel="next"` pages.
    static let webLink = HTTPField.Name("Link")!
    /// Spout's `Spout-Truncated: true`, a header or a trailer: the endpoint's `rowLimit` cut the result.
    static let spoutTruncated = HTTPField.Name("Spout-Truncated")!
    /// The id Spout gives each request, to find it in the server's log.
    static let requestID = HTTPField.Name("X-Request-Id")!
    /// The IETF draft's `Idempotency-Key`: a queued write's key, the same at every attempt.
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
}
