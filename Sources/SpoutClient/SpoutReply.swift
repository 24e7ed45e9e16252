import Foundation
import HTTPTypes

/// The answer to a write: its status, headers and whole body (writes answer one row at most).
public struct SpoutReply: Sendable {
    public var status: Int
    public var headers: HTTPFields
    public var body: Data
    let dateFormat: SpoutDateFormat

    /// The `Location` header (`/pets/Rex` after a 201).
    public var location: String? { self.headers[.location] }

    /// The body decoded as `type`, dates as the client is configured.
    public func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        do {
            return try self.dateFormat.makeDecoder().decode(type, from: self.body)
        } catch {
            throw SpoutClientError.decoding(row: 0, String(describing: error))
        }
    }
}
