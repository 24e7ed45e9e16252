import HTTPTypes

/// An error that chooses the response it becomes (``ErrorResponse``): its status, extra header
/// fields and JSON body. The HTTP layer
/// knows no other error: a module that throws its own errors through handlers conforms them
/// (SpoutEndpoints does so for the database's).
///
/// Contract: ``responseBody`` is what any client may see; it must never hold SQL text,
/// database messages, tokens or credentials.
public protocol HTTPResponseError: Error {
    var status: HTTPResponse.Status { get }
    /// Extra fields of the response (`Retry-After`, say); none by default.
    var headers: HTTPFields { get }
    /// The JSON body.
    var responseBody: [UInt8] { get }
    /// Whether the access log line carries the error's reflection (`String(reflecting:)`) though
    /// it is not a 5xx: a refusal an operator must be able to trace. False by default.
    var logsCause: Bool { get }
}

extension HTTPResponseError {
    public var headers: HTTPFields { HTTPFields() }
    public var logsCause: Bool { false }
}

extension HTTPError: HTTPResponseError {
    public var responseBody: [UInt8] { ErrorResponse(status: self.status, message: self.message).body }
}

extension ArgumentError: HTTPResponseError {
    public var status: HTTPResponse.Status {
        switch self.reason {
        case .unsupportedMediaType, .unsupportedBodyType: return .unsupportedMediaType
        default: return .badRequest
        }
    }
    public var responseBody: [UInt8] { self.body }
}
