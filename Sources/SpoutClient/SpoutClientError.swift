/// Everything a ``SpoutClient`` call can fail with.
public enum SpoutClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server answered with an error status; its JSON error body, decoded.
    case server(SpoutServerError)
    /// No response arrived: the connection could not be made, or closed before the head.
    /// Idempotent GETs are retried on this error (``SpoutRetryPolicy``).
    case connectionFailed(String)
    /// TLS refused the server: its certificate chain does not lead to a trusted root (the
    /// system's or ``SpoutTLSConfiguration/additionalTrustRootsPEM``), it expired or is not yet
    /// valid, it names another host, or its key matches none of the pins
    /// (``SpoutTLSConfiguration/pinnedKeys``). Nothing of the request was sent; never retried,
    /// never answered from a stale cached copy, never downgraded to plain HTTP.
    case certificateRejected(String)
    /// The server sent nothing for the transport's read timeout while the client waited for
    /// the response head or for more of the body.
    case timedOut(String)
    /// The connection closed before the body's end (no terminating chunk, fewer bytes than
    /// `Content-Length`). A truncated body is never a short sequence.
    case truncatedBody
    /// The body is not the JSON array or JSON Lines it should be.
    case malformedBody(String)
    /// A row (counted from 0 across pages) did not decode into the requested type.
    case decoding(row: Int, String)
    /// A URL could not be built, or a `Link` pointed to another origin.
    case invalidURL(String)
    /// The transport's configuration cannot be used (a trust root that is not PEM, a pin that
    /// is not the Base64 of 32 bytes).
    case invalidConfiguration(String)
    /// The server answered 304 although there was no cached copy to revalidate.
    case unexpectedNotModified
    /// A local SQLite file (a sync store, a write queue) could not be opened, read or written:
    /// SQLite's reason (a full disk, a folder the app may not write).
    case storeFailed(String)

    public var description: String {
        switch self {
        case .server(let error): return error.description
        case .connectionFailed(let reason): return "connection failed: \(reason)"
        case .certificateRejected(let reason): return "TLS certificate rejected: \(reason)"
        case .timedOut(let reason): return "timed out: \(reason)"
        case .truncatedBody: return "the response body was truncated (the connection closed before its end)"
        case .malformedBody(let reason): return "malformed body: \(reason)"
        case .decoding(let row, let reason): return "row \(row) did not decode: \(reason)"
        case .invalidURL(let reason): return "invalid URL: \(reason)"
        case .invalidConfiguration(let reason): return "invalid configuration: \(reason)"
        case .unexpectedNotModified: return "304 Not Modified without a cached copy"
        case .storeFailed(let reason): return "local store failed: \(reason)"
        }
    }
}
