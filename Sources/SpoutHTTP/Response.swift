import SpoutCore

/// What a route handler returns: a status, extra headers and a body.
///
/// The layer adds `Content-Type`, `Content-Length` or chunked framing, `X-Request-Id` and
/// `Connection` itself.
public struct Response: Sendable {
    public enum Body: Sendable {
        /// No body (`Content-Length: 0`; none at all for 204 and 304).
        case empty
        /// A body known in full.
        case bytes([UInt8], contentType: String)
        /// A body its producer makes through the exchange: SpoutEndpoints' rows, read from
        /// the database and sent whole or streamed.
        case produced(any ResponseProducer)
    }

    public var status: Int
    public var headers: HeaderFields
    public var body: Body

    public init(status: Int = 200, headers: HeaderFields = HeaderFields(), body: Body = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A complete body with its content type (HTML docs, an OpenAPI document).
    public static func bytes(
        _ bytes: [UInt8], contentType: String, status: Int = 200, headers: HeaderFields = HeaderFields()
    ) -> Response {
        Response(status: status, headers: headers, body: .bytes(bytes, contentType: contentType))
    }

    public static func text(
        _ text: String, contentType: String = "text/plain; charset=utf-8", status: Int = 200,
        headers: HeaderFields = HeaderFields()
    ) -> Response {
        self.bytes(Array(text.utf8), contentType: contentType, status: status, headers: headers)
    }

    /// 204 No Content.
    public static func noContent(headers: HeaderFields = HeaderFields()) -> Response {
        Response(status: 204, headers: headers, body: .empty)
    }

    /// 201 Created with a `Location` header.
    public static func created(location: String, body: Body = .empty) -> Response {
        Response(status: 201, headers: ["Location": location], body: body)
    }
}

/// An error a handler throws to answer with a specific status and a JSON body
/// `{"error": message}`; with `parameter`, the body names it too.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    public var status: Int
    public var message: String
    public var headers: HeaderFields

    public init(status: Int, message: String, headers: HeaderFields = HeaderFields()) {
        self.status = status
        self.message = message
        self.headers = headers
    }

    public var description: String { "HTTP \(self.status): \(self.message)" }
}
