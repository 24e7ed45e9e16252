import Foundation
import HTTPTypes

/// Turns an error response into a ``SpoutServerError``.
enum ErrorBodyDecoder {
    /// The most of an error body that is read; Spout's are a few hundred bytes.
    static let maximumBytes = 64 * 1024

    /// The fields of Spout's error body; `value` may be any JSON scalar.
    private struct Body: Decodable {
        var error: String
        var parameter: String?
        var value: Scalar?
        var allowed: [Scalar]?
    }

    /// A JSON scalar kept as its text.
    private struct Scalar: Decodable {
        var text: String

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let string = try? container.decode(String.self) {
                self.text = string
            } else if let integer = try? container.decode(Int64.self) {
                self.text = String(integer)
            } else if let number = try? container.decode(Double.self) {
                self.text = String(number)
            } else if let flag = try? container.decode(Bool.self) {
                self.text = String(flag)
            } else {
                self.text = "null"
            }
        }
    }

    /// Reads at most ``maximumBytes`` of `response`'s body and decodes it.
    static func error(from response: TransportResponse) async -> SpoutServerError {
        self.decode(status: response.status, body: await self.body(of: response), requestID: response.headers[.requestID])
    }

    /// A bulk write's error: ``SpoutBulkRecordError`` when the body names a record's `line`,
    /// else ``SpoutClientError/server(_:)``.
    static func bulkError(from response: TransportResponse) async -> any Error {
        let body = await self.body(of: response)
        let error = self.decode(status: response.status, body: body, requestID: response.headers[.requestID])
        struct Position: Decodable { var line: Int? }
        guard let line = (try? JSONDecoder().decode(Position.self, from: Data(body)))?.line else { return SpoutClientError.server(error) }
        return SpoutBulkRecordError(record: line - 1, line: line, error: error)
    }

    private static func body(of response: TransportResponse) async -> [UInt8] {
        var bytes: [UInt8] = []
        while bytes.count < self.maximumBytes, let chunk = try? await response.body.nextChunk() {
            bytes += chunk
        }
        response.body.close()
        return bytes
    }

    /// Spout's JSON error fields, or the body's text as the message when it is not that JSON.
    static func decode(status: Int, body: [UInt8], requestID: String?) -> SpoutServerError {
        if let decoded = try? JSONDecoder().decode(Body.self, from: Data(body)) {
            return SpoutServerError(
                status: status, message: decoded.error, parameter: decoded.parameter, value: decoded.value?.text,
                allowed: decoded.allowed?.map(\.text), requestID: requestID)
        }
        let text = String(decoding: body.prefix(200), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return SpoutServerError(status: status, message: text.isEmpty ? "HTTP \(status)" : text, requestID: requestID)
    }
}
