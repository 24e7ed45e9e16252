import HTTPTypes

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
