import HTTPTypes
import SpoutCore

/// A parsed HTTP request, as a route handler sees it.
///
/// The body has been read completely (up to ``ServerConfiguration/maximumBodySize``) and the
/// route's declared parameters have been converted into ``arguments`` before the handler runs;
/// except on a route that streams its body (``Route/streamsBody``): then ``body`` is empty, the
/// body arrives through ``bodyStream``, and only the path and query string give arguments.
public struct Request: Sendable {
    /// The request id: the client's `X-Request-Id` when it sent one, else generated. Echoed in
    /// the response's `X-Request-Id` header and logged as `request.id`.
    public let id: String
    /// This server's span of the request in its W3C trace, `<trace id>-<span id>` (32 and 16
    /// lowercase hex digits, ``RequestTrace``); nil for a request the server did not receive
    /// (a test's).
    public let traceContext: String?
    /// The request's span, which the spans of the work done for it are children of; nil when
    /// the server does not trace (or for a request it did not receive).
    public internal(set) var span: RequestSpan? = nil
    public let method: HTTPRequest.Method
    /// The path without the query string, as sent (not percent-decoded).
    public let path: String
    /// The query string after `?`, as sent; nil when there was no `?`.
    public let queryString: String?
    /// The decoded query string: every value of repeated keys; bare keys (`?api`) are present
    /// with no value.
    public let query: RawArguments
    /// The header fields, in order and spelled as received.
    public let headers: HTTPFields
    public let body: [UInt8]
    /// The body as it arrives, on a route that streams it (``Route/streamsBody``); nil
    /// elsewhere.
    public internal(set) var bodyStream: RequestBodyStream?
    /// The matched route's template (`/employees/{employeeNumber}`), when a route matched.
    public let routeTemplate: String?
    /// The values of the template's `{keys}`, percent-decoded.
    public let pathKeys: [String: String]
    /// Path keys, then query arguments, then body arguments, merged (before conversion).
    public let rawArguments: RawArguments
    /// The route's declared parameters, converted; one entry per parameter, and what the
    /// handler adds before its statements run (a token's claims, `claims.sub`).
    public var arguments: [String: SQLValue]

    /// Creates a request; the server does this for every request, tests may do it to call
    /// handlers directly.
    public init(
        id: String = "test",
        traceContext: String? = nil,
        method: HTTPRequest.Method,
        path: String,
        queryString: String? = nil,
        headers: HTTPFields = HTTPFields(),
        body: [UInt8] = [],
        routeTemplate: String? = nil,
        pathKeys: [String: String] = [:],
        rawArguments: RawArguments? = nil,
        arguments: [String: SQLValue] = [:]
    ) {
        self.init(
            id: id, traceContext: traceContext, method: method, path: path, queryString: queryString, headers: headers, body: body,
            query: queryString.flatMap { try? FormURLEncoding.parse($0) } ?? RawArguments(), routeTemplate: routeTemplate,
            pathKeys: pathKeys, rawArguments: rawArguments, arguments: arguments
        )
    }

    init(
        id: String, traceContext: String?, method: HTTPRequest.Method, path: String, queryString: String?, headers: HTTPFields, body: [UInt8],
        query: RawArguments, routeTemplate: String?, pathKeys: [String: String], rawArguments: RawArguments?, arguments: [String: SQLValue]
    ) {
        self.id = id
        self.traceContext = traceContext
        self.method = method
        self.path = path
        self.queryString = queryString
        self.query = query
        self.headers = headers
        self.body = body
        self.routeTemplate = routeTemplate
        self.pathKeys = pathKeys
        self.rawArguments = rawArguments ?? self.query
        self.arguments = arguments
    }

    /// Whether the query string has `name`, with or without a value (`?api`).
    public func hasQueryKey(_ name: String) -> Bool {
        self.query.contains(name)
    }
}
