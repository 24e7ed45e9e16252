/// How an error becomes an HTTP response: status, extra headers and a JSON body.
///
/// Rules callers may rely on: an ``HTTPResponseError`` chooses its own (``ArgumentError`` is
/// 400 with the parameter and value, ``HTTPError`` keeps its status; SpoutEndpoints maps the
/// database's errors); any other error is a generic 500 whose body says nothing more.
public struct ErrorResponse: Sendable {
    public var status: Int
    public var headers: HeaderFields
    /// The JSON body.
    public var body: [UInt8]

    public init(status: Int, headers: HeaderFields = HeaderFields(), body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// `{"error": message}` with `status`.
    public init(status: Int, message: String, headers: HeaderFields = HeaderFields()) {
        var object = JSONObjectWriter()
        object.add("error", message)
        self.init(status: status, headers: headers, body: object.finished)
    }

    public init(for error: any Error) {
        if let error = error as? any HTTPResponseError {
            self.init(status: error.status, headers: error.headers, body: error.responseBody)
        } else {
            self.init(status: 500, message: "internal server error")
        }
    }
}
