import SpoutCore

/// How an error becomes an HTTP response: status, extra headers and a JSON body.
///
/// Rules callers may rely on:
/// - ``ArgumentError`` is 400 with the parameter and value; ``HTTPError`` keeps its status.
/// - ``RowStreamError/noRow`` is 404, ``RowStreamError/attachmentsNotAllowedInCSV`` is 406.
/// - ``DatabaseError``: `poolExhausted` 503 with `Retry-After: 1`, `connectionFailed` and
///   `connectionLost` 503, `statementTimeout` 504, `uniqueViolation` 409,
///   `constraintViolation` 422, `invalidValue` 400, anything else 500.
/// - Bodies name only the error's code, never ``DatabaseError/message`` (which may hold SQL,
///   database messages or credentials); any other error is a generic 500.
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
        switch error {
        case let error as ArgumentError:
            self.init(status: 400, body: error.body)
        case let error as HTTPError:
            self.init(status: error.status, message: error.message, headers: error.headers)
        case RowStreamError.noRow:
            self.init(status: 404, message: "not found")
        case RowStreamError.attachmentsNotAllowedInCSV:
            self.init(status: 406, message: RowStreamError.attachmentsNotAllowedInCSV.description)
        case let error as DatabaseError:
            self.init(databaseError: error)
        default:
            self.init(status: 500, message: "internal server error")
        }
    }

    private init(databaseError error: DatabaseError) {
        switch error.code {
        case .poolExhausted:
            self.init(status: 503, message: error.code.name, headers: ["Retry-After": "1"])
        case .connectionFailed, .connectionLost:
            self.init(status: 503, message: error.code.name)
        case .statementTimeout:
            self.init(status: 504, message: error.code.name)
        case .uniqueViolation:
            self.init(status: 409, message: error.code.name)
        case .constraintViolation:
            self.init(status: 422, message: error.code.name)
        case .invalidValue:
            self.init(status: 400, message: error.code.name)
        default:
            self.init(status: 500, message: "internal server error")
        }
    }
}
