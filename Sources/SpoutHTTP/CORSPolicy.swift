import HTTPTypes

/// Which browser origins may read the server's responses (CORS), and what preflights answer.
///
/// Rules callers may rely on:
/// - No allowed origins (the default) turns CORS off: no CORS headers, and `OPTIONS` is routed
///   like any other method.
/// - With `*` among the origins, every response carries `Access-Control-Allow-Origin: *`.
///   Otherwise a response to a request whose `Origin` is in the list (compared without regard
///   to ASCII case) carries that origin, and every response carries `Vary: Origin` so caches
///   keep the variants apart. Other origins get no CORS headers (the browser then refuses to
///   hand the response to the page).
/// - Responses with an allowed origin also carry
///   `Access-Control-Expose-Headers: X-Request-Id, traceresponse`.
/// - A preflight (`OPTIONS` with `Access-Control-Request-Method`) on a path with routes is 204
///   with `Access-Control-Allow-Methods` (the methods of the path), `Access-Control-Allow-Headers`
///   (``allowedHeaders``) and `Access-Control-Max-Age`; from an origin not allowed it is 403;
///   on an unknown path 404. Preflights never need credentials.
/// - `Access-Control-Allow-Credentials` is never sent: API keys travel in request headers,
///   not cookies.
public struct CORSPolicy: Sendable, Hashable {
    /// The default of ``allowedHeaders``.
    public static let defaultAllowedHeaders = [
        "Content-Type", "Authorization", "X-API-Key", "X-Request-Id", "Accept", "Accept-Encoding", "traceparent", "tracestate",
    ]

    /// Origins (`https://app.example.com`, scheme, host and port as browsers send them) or `*`.
    public var allowedOrigins: [String]
    /// The request headers a preflight allows.
    public var allowedHeaders: [String]
    /// How long a browser may cache a preflight's answer, in seconds.
    public var maxAgeSeconds: Int

    public init(
        allowedOrigins: [String] = [], allowedHeaders: [String] = Self.defaultAllowedHeaders, maxAgeSeconds: Int = 600
    ) {
        self.allowedOrigins = allowedOrigins
        self.allowedHeaders = allowedHeaders
        self.maxAgeSeconds = max(0, maxAgeSeconds)
    }

    /// Whether CORS is on (at least one allowed origin).
    public var isEnabled: Bool { !self.allowedOrigins.isEmpty }

    /// Whether every origin is allowed (`*`).
    public var allowsAnyOrigin: Bool { self.allowedOrigins.contains("*") }

    /// The value of `Access-Control-Allow-Origin` for a request with `origin`; nil when the
    /// response gets none.
    public func allowOrigin(for origin: String?) -> String? {
        if self.allowsAnyOrigin { return "*" }
        guard let origin, self.allowedOrigins.contains(where: { Self.sameOrigin($0, origin) }) else { return nil }
        return origin
    }

    /// The CORS fields of an actual (not preflight) response to a request with `origin`.
    public func responseHeaders(origin: String?) -> HTTPFields {
        var headers = HTTPFields()
        guard self.isEnabled else { return headers }
        if let allowed = self.allowOrigin(for: origin) {
            headers.append(HTTPField(name: .accessControlAllowOrigin, value: allowed))
            let exposed = [HTTPField.Name.requestID, .traceResponse].map(\.rawName).joined(separator: ", ")
            headers.append(HTTPField(name: .accessControlExposeHeaders, value: exposed))
        }
        if !self.allowsAnyOrigin { headers.append(HTTPField(name: .vary, value: "Origin")) }
        return headers
    }

    /// The fields a successful preflight answer adds to ``responseHeaders(origin:)``, for a
    /// path serving `methods`.
    public func preflightHeaders(methods: [HTTPRequest.Method]) -> HTTPFields {
        var headers: HTTPFields = [.accessControlAllowMethods: methods.map(\.rawValue).joined(separator: ", ")]
        if !self.allowedHeaders.isEmpty {
            headers.append(HTTPField(name: .accessControlAllowHeaders, value: self.allowedHeaders.joined(separator: ", ")))
        }
        headers.append(HTTPField(name: .accessControlMaxAge, value: String(self.maxAgeSeconds)))
        return headers
    }

    static func sameOrigin(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && a.lowercased() == b.lowercased()
    }
}
