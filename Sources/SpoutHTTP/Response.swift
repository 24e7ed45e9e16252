import HTTPTypes
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

    public var status: HTTPResponse.Status
    public var headers: HTTPFields
    public var body: Body

    public init(status: HTTPResponse.Status = .ok, headers: HTTPFields = HTTPFields(), body: Body = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A complete body with its content type (HTML docs, an OpenAPI document).
    public static func bytes(
        _ bytes: [UInt8], contentType: String, status: HTTPResponse.Status = .ok, headers: HTTPFields = HTTPFields()
    ) -> Response {
        Response(status: status, headers: headers, body: .bytes(bytes, contentType: contentType))
    }

    public static func text(
        _ text: String, contentType: String = "text/plain; charset=utf-8", status: HTTPResponse.Status = .ok,
        headers: HTTPFields = HTTPFields()
    ) -> Response {
        self.bytes(Array(text.utf8), contentType: contentType, status: status, headers: headers)
    }

    /// 204 No Content.
    public static func noContent(headers: HTTPFields = HTTPFields()) -> Response {
        Response(status: .noContent, headers: headers, body: .empty)
    }

    /// 201 Created with a `Location` header.
    public static func created(location: String, body: Body = .empty) -> Response {
        Response(status: .created, headers: [.location: location], body: body)
    }
}

/// An error a handler throws to answer with a specific status, extra header fields and a JSON
/// body `{"error": message}`.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    public var status: HTTPResponse.Status
    public var message: String
    public var headers: HTTPFields

    public init(status: HTTPResponse.Status, message: String, headers: HTTPFields = HTTPFields()) {
        self.status = status
        self.message = message
        self.headers = headers
    }

    public var description: String { "HTTP \(self.status.code): \(self.message)" }
}
