import SpoutCore
import SpoutHTTP

/// The responses the database's errors become. Bodies name only the error's code, never
/// ``SpoutCore/DatabaseError/message`` (which may hold SQL, database messages or credentials).
///
/// `poolExhausted` 503 with `Retry-After: 1`, `connectionFailed` and `connectionLost` 503,
/// `statementTimeout` 504, `uniqueViolation` 409, `constraintViolation` 422, `invalidValue`
/// 400, anything else a generic 500.
extension DatabaseError: HTTPResponseError {
    public var status: Int {
        switch self.code {
        case .poolExhausted, .connectionFailed, .connectionLost: return 503
        case .statementTimeout: return 504
        case .uniqueViolation: return 409
        case .constraintViolation: return 422
        case .invalidValue: return 400
        default: return 500
        }
    }

    public var headers: HeaderFields {
        self.code == .poolExhausted ? ["Retry-After": "1"] : HeaderFields()
    }

    public var responseBody: [UInt8] {
        ErrorResponse(status: self.status, message: self.status == 500 ? "internal server error" : self.code.name).body
    }

    public var countedFailure: CountedFailure? {
        switch self.code {
        case .poolExhausted: return .acquireTimeout
        case .statementTimeout: return .statementTimeout
        default: return nil
        }
    }
}

/// A single-row response without a row is 404; attached arrays asked for as CSV are 406.
extension RowStreamError: HTTPResponseError {
    public var status: Int {
        switch self {
        case .noRow: return 404
        case .attachmentsNotAllowedInCSV: return 406
        }
    }

    public var responseBody: [UInt8] {
        switch self {
        case .noRow: return ErrorResponse(status: 404, message: "not found").body
        case .attachmentsNotAllowedInCSV: return ErrorResponse(status: 406, message: self.description).body
        }
    }
}
