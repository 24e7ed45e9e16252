import HTTPTypes

/// Handles one route: receives the parsed request, returns what to send.
///
/// Handlers run in a task whose jobs run on the connection's event loop (no thread hop between
/// the request, the handler and the response); they must not block (database work runs on the
/// database's own threads: SpoutCore's `Database.withSession`).
public typealias RouteHandler = @Sendable (Request) async throws -> Response

/// A handler registered for a method on a path template.
public struct Route: Sendable {
    public let method: HTTPRequest.Method
    /// The template as registered: `/employees/{employeeNumber}`.
    public let template: String
    /// The declared parameters, converted from path keys, the query string and the body.
    public let parameters: [Parameter]
    /// Free text for API documentation.
    public let summary: String?
    /// The keys a request must present (see ``APIKeySet``); nil leaves the route open. The
    /// server checks them before it converts arguments or runs the handler; `HEAD` served by
    /// a `GET` route needs that route's keys, and CORS preflights never need any.
    public let apiKeys: APIKeySet?
    /// The parameter the whole request body is (an upload), instead of a form or JSON body of
    /// arguments; nil for the latter.
    public let body: RouteBody?
    /// The largest request body this route takes, instead of the server's
    /// (``ServerConfiguration/maximumBodySize``), larger or smaller; nil: the server's.
    public let maximumBodySize: Int?
    /// Whether the handler reads the body as it arrives (``Request/bodyStream``), of any size,
    /// instead of the server reading it whole first (bounded by ``maximumBodySize`` and the
    /// server's buffered-body budget). The handler is called when the head has arrived.
    public let streamsBody: Bool
    /// Fields every error answer of this route carries, whoever fails (the handler, argument
    /// conversion, a stream): `Cache-Control: private` and `Vary` for a route whose answers
    /// depend on who asks, so a shared cache never keeps one caller's 404 for another.
    public let errorFields: HTTPFields
    public let handler: RouteHandler
    /// The names of the template's `{keys}`, in order.
    public let keys: [String]

    public init(
        _ method: HTTPRequest.Method, _ template: String, parameters: [Parameter] = [], summary: String? = nil,
        apiKeys: APIKeySet? = nil, body: RouteBody? = nil, maximumBodySize: Int? = nil, streamsBody: Bool = false,
        errorFields: HTTPFields = HTTPFields(), handler: @escaping RouteHandler
    ) {
        self.method = method
        self.template = template
        self.parameters = parameters
        self.summary = summary
        self.apiKeys = apiKeys
        self.body = body
        self.maximumBodySize = maximumBodySize
        self.streamsBody = streamsBody
        self.errorFields = errorFields
        self.handler = handler
        self.keys = PathTemplate.segments(of: template).compactMap {
            if case .key(let name) = $0 { return name }
            return nil
        }
    }
}

/// A path template split into segments: `/a/{b}` is `[.literal("a"), .key("b")]`.
enum PathTemplate {
    enum Segment: Hashable {
        case literal(String)
        case key(String)
    }

    static func segments(of template: String) -> [Segment] {
        template.split(separator: "/", omittingEmptySubsequences: true).map { part in
            if part.hasPrefix("{") && part.hasSuffix("}") && part.count > 2 {
                return .key(String(part.dropFirst().dropLast()))
            }
            return .literal(String(part))
        }
    }

    /// The decoded segments of a request path (percent-decoded; `+` stays `+`).
    static func requestSegments(of path: Substring) -> [String] {
        path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true).map {
            FormURLEncoding.decode($0, plusAsSpace: false)
        }
    }
}
