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
    /// media type (`image/jpeg`). `bytes` is `Data` (`image.jpegData(compressionQuality:)`) or
    /// `[UInt8]`.
    public static func file(_ bytes: some Sequence<UInt8>, mediaType: String) -> SpoutRequestBody {
        SpoutRequestBody(contentType: mediaType, bytes: Array(bytes))
    }

    /// `multipart/form-data` (RFC 7578): text fields and files in one body, as an HTML form
    /// with a file input sends them. A file part goes to a `bytes` parameter as it is. The
    /// boundary is random and checked against every part's content.
    public static func multipart(_ parts: [SpoutFormPart]) -> SpoutRequestBody {
        var boundary = "spout-" + UUID().uuidString
        while parts.contains(where: { Self.contains(Array(boundary.utf8), in: $0.bytes) }) {
            boundary = "spout-" + UUID().uuidString
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(parts.reduce(0) { $0 + $1.bytes.count + 160 })
        for part in parts {
            bytes += Array("--\(boundary)\r\n\(part.head)".utf8)
            bytes += part.bytes
            bytes += Array("\r\n".utf8)
        }
        bytes += Array("--\(boundary)--\r\n".utf8)
        return SpoutRequestBody(contentType: "multipart/form-data; boundary=\(boundary)", bytes: bytes)
    }

    /// Whether `needle` occurs in `haystack`.
    private static func contains(_ needle: [UInt8], in haystack: [UInt8]) -> Bool {
        guard haystack.count >= needle.count, let first = needle.first else { return false }
        for start in 0...(haystack.count - needle.count) where haystack[start] == first {
            if haystack[start..<(start + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }

    /// `application/json`: `value` encoded by `encoder`.
    public static func json<Value: Encodable>(_ value: Value, encoder: JSONEncoder = JSONEncoder()) throws -> SpoutRequestBody {
        SpoutRequestBody(contentType: "application/json", bytes: [UInt8](try encoder.encode(value)))
    }
}
