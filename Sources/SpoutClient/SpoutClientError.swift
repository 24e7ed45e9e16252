/// Everything a ``SpoutClient`` call can fail with.
public enum SpoutClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server answered with an error status; its JSON error body, decoded.
    case server(SpoutServerError)
    /// No response arrived: the connection could not be made, or closed before the head.
    case connectionFailed(String)
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
    /// The server answered 304 although there was no cached copy to revalidate.
    case unexpectedNotModified

    public var description: String {
        switch self {
        case .server(let error): return error.description
        case .connectionFailed(let reason): return "connection failed: \(reason)"
        case .timedOut(let reason): return "timed out: \(reason)"
        case .truncatedBody: return "the response body was truncated (the connection closed before its end)"
        case .malformedBody(let reason): return "malformed body: \(reason)"
        case .decoding(let row, let reason): return "row \(row) did not decode: \(reason)"
        case .invalidURL(let reason): return "invalid URL: \(reason)"
        case .unexpectedNotModified: return "304 Not Modified without a cached copy"
        }
    }
}

/// An error response of Spout: the status and the fields of its JSON body
/// (`{"error":"invalid integer","parameter":"employeeNumber","value":"abc"}`).
///
/// A body that is not Spout's JSON (a proxy's HTML page) leaves `message` as the start of the
/// body's text and the other fields nil.
public struct SpoutServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status (400, 404, 409, 503…).
    public var status: Int
    /// The body's `error`: what went wrong.
    public var message: String
    /// The body's `parameter`: the argument at fault, for a caller's mistake.
    public var parameter: String?
    /// The body's `value`: the rejected value, as text.
    public var value: String?
    /// The body's `allowed`: the accepted values, when the parameter has a set of them.
    public var allowed: [String]?
    /// The `X-Request-Id` response header, to find the request in the server's log.
    public var requestID: String?

    public init(
        status: Int, message: String, parameter: String? = nil, value: String? = nil, allowed: [String]? = nil,
        requestID: String? = nil
    ) {
        self.status = status
        self.message = message
        self.parameter = parameter
        self.value = value
        self.allowed = allowed
        self.requestID = requestID
    }

    public var description: String {
        var text = "HTTP \(self.status): \(self.message)"
        if let parameter = self.parameter { text += " (parameter \(parameter)" + (self.value.map { " = \($0)" } ?? "") + ")" }
        if let allowed = self.allowed { text += "; allowed: \(allowed.joined(separator: ", "))" }
        return text
    }
}
