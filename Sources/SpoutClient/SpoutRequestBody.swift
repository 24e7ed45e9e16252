import Foundation

/// The body of a write sent by ``SpoutClient/send(_:path:query:body:)``.
public struct SpoutRequestBody: Sendable {
    /// The `Content-Type` sent.
    public var contentType: String
    /// The bytes sent.
    public var bytes: [UInt8]

    public init(contentType: String, bytes: [UInt8]) {
        self.contentType = contentType
        self.bytes = bytes
    }

    /// `application/x-www-form-urlencoded`, as `curl -d 'name=Rex&owner=Diane'` sends.
    public static func form(_ fields: [URLQueryItem]) -> SpoutRequestBody {
        SpoutRequestBody(contentType: "application/x-www-form-urlencoded", bytes: Array(RequestTarget.encode(fields).utf8))
    }

    /// A file as the whole body (a photo, a PDF), for an endpoint that takes its body as a
    /// `bytes` parameter (`body:` in its endpoint file): the bytes as they are, with their
    /// media type (`image/jpeg`).
    public static func file(_ bytes: [UInt8], mediaType: String) -> SpoutRequestBody {
        SpoutRequestBody(contentType: mediaType, bytes: bytes)
    }

    /// `application/json`: `value` encoded by `encoder`.
    public static func json<Value: Encodable>(_ value: Value, encoder: JSONEncoder = JSONEncoder()) throws -> SpoutRequestBody {
        SpoutRequestBody(contentType: "application/json", bytes: [UInt8](try encoder.encode(value)))
    }
}
