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

    /// `application/json`: `value` encoded by `encoder`.
    public static func json<Value: Encodable>(_ value: Value, encoder: JSONEncoder = JSONEncoder()) throws -> SpoutRequestBody {
        SpoutRequestBody(contentType: "application/json", bytes: [UInt8](try encoder.encode(value)))
    }
}

/// The methods of ``SpoutClient/send(_:path:query:body:)``.
public enum SpoutMethod: String, Sendable {
    case post = "POST"
    case put = "PUT"
    case patch = "PATCH"
    case delete = "DELETE"
}

/// The answer to a write: its status, headers and whole body (writes answer one row at most).
public struct SpoutReply: Sendable {
    public var status: Int
    public var headers: SpoutHeaders
    public var body: [UInt8]
    let dateFormat: SpoutDateFormat

    /// The `Location` header (`/pets/Rex` after a 201).
    public var location: String? { self.headers["Location"] }

    /// The body decoded as `type`, dates as the client is configured.
    public func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        do {
            return try self.dateFormat.makeDecoder().decode(type, from: Data(self.body))
        } catch {
            throw SpoutClientError.decoding(row: 0, String(describing: error))
        }
    }
}

/// A single object and where it came from (the network, a revalidated or a stale copy).
public struct SpoutObject<Value> {
    public var value: Value
    public var source: ResponseSource
    public var headers: SpoutHeaders
}

extension SpoutObject: Sendable where Value: Sendable {}
