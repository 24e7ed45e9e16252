import HTTPTypes
import NIOHTTP1

// The server speaks swift-http-types; NIOHTTP1 parses and frames the bytes. These are the
// conversions between the two, chosen so that the bytes on the wire stay those NIOHTTP1 has
// always written for Spout.

extension HTTPFields {
    /// NIO's header fields as swift-http-types', in order and spelled as received (a name HTTP
    /// does not allow is dropped: NIO's parser does not produce one).
    init(_ headers: HTTPHeaders) {
        self.init(headers.compactMap { name, value in HTTPField.Name(name).map { HTTPField(name: $0, value: value) } })
    }
}

extension HTTPHeaders {
    /// `fields` as NIO's header fields, in order, each name spelled as it was made
    /// (`HTTPField.Name.rawName`).
    init(_ fields: HTTPFields) {
        self.init(fields.map { ($0.name.rawName, $0.value) })
    }
}

extension HTTPResponseStatus {
    /// NIO's status for `status`: its code, with NIO's reason phrase, never `status`'s own. The
    /// two differ (413 is `Payload Too Large` in NIO, `Content Too Large` in swift-http-types;
    /// 422 `Unprocessable Entity`, `Unprocessable Content`), and a status made from a number
    /// has none: the status line stays the one Spout has always sent.
    init(_ status: HTTPResponse.Status) {
        self.init(statusCode: status.code)
    }
}
