import HTTPTypes
import NIOCore
import NIOHTTP1

/// How an error becomes an HTTP response: status, extra headers and a JSON body.
///
/// Rules callers may rely on: an ``HTTPResponseError`` chooses its own (``ArgumentError`` is
/// 400 with the parameter and value, ``HTTPError`` keeps its status; SpoutEndpoints maps the
/// database's errors); any other error is a generic 500 whose body says nothing more.
public struct ErrorResponse: Sendable {
    public var status: HTTPResponse.Status
    public var headers: HTTPFields
    /// The JSON body.
    public var body: [UInt8]

    public init(status: HTTPResponse.Status, headers: HTTPFields = HTTPFields(), body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// `{"error": message}` with `status`.
    public init(status: HTTPResponse.Status, message: String, headers: HTTPFields = HTTPFields()) {
        var object = JSONObjectWriter()
        object.add("error", message)
        self.init(status: status, headers: headers, body: object.finished)
    }

    public init(for error: any Error) {
        if let error = error as? any HTTPResponseError {
            self.init(status: error.status, headers: error.headers, body: error.responseBody)
        } else {
            self.init(status: .internalServerError, message: "internal server error")
        }
    }
}

extension ErrorResponse {
    /// This error as the last response of a connection, sent outside any request's exchange (a
    /// connection refused when accepted, a request the parser rejected): the head, with the
    /// error's fields, the body's type and length and `Connection: close` (no request id, no
    /// CORS fields), and the body. The caller writes both, then `.end`, and closes.
    func closingParts(allocator: ByteBufferAllocator) -> (head: HTTPResponseHead, body: ByteBuffer) {
        var fields = self.headers
        fields[.contentType] = "application/json"
        fields[.contentLength] = String(self.body.count)
        fields[.connection] = "close"
        fields[.xContentTypeOptions] = "nosniff"
        let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(self.status), headers: HTTPHeaders(fields))
        return (head, allocator.buffer(bytes: self.body))
    }
}
