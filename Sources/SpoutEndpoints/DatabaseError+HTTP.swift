import HTTPTypes
import SpoutCore
import SpoutHTTP

/// The responses the database's errors become. Bodies name only the error's code, never
/// ``SpoutCore/DatabaseError/message`` (which may hold SQL, database messages or credentials).
///
/// `poolExhausted`, `busy`, `serializationFailure`, `connectionFailed`, `connectionLost` and
/// `serverReadOnly` (the server became a standby: a failover under way) 503 with
/// `Retry-After: 1`: each is worth the same request again shortly, and a write refused this
/// way was not applied (one lost mid-commit may have been: a retry with the same
/// `Idempotency-Key` applies it exactly once); `statementTimeout` and `notAnswering` 504,
/// `storageFull` 507,
/// `uniqueViolation` 409, `constraintViolation` 422, `invalidValue` and `unrepresentableText`
/// 400, `permissionDenied` 403 (its database message goes to the access log: a missing grant
/// is the operator's to fix), anything else a generic 500.
extension DatabaseError: HTTPResponseError {
    public var status: HTTPResponse.Status {
        switch self.code {
        case .poolExhausted, .busy, .serializationFailure, .connectionFailed, .connectionLost, .serverReadOnly: return .serviceUnavailable
        case .statementTimeout, .notAnswering: return .gatewayTimeout
        case .storageFull: return .insufficientStorage
        case .uniqueViolation: return .conflict
        case .constraintViolation: return .unprocessableContent
        case .invalidValue, .unrepresentableText: return .badRequest
        case .permissionDenied: return .forbidden
        default: return .internalServerError
        }
    }

    public var logsCause: Bool { self.code == .permissionDenied }

    public var headers: HTTPFields {
        self.status == .serviceUnavailable ? [.retryAfter: "1"] : HTTPFields()
    }

    public var responseBody: [UInt8] {
        let message = self.status == .internalServerError ? "internal server error" : self.code.name
        return ErrorResponse(status: self.status, message: message).body
    }
}

/// A single-row response without a row is 404; attached arrays asked for as CSV are 406.
extension RowStreamError: HTTPResponseError {
    public var status: HTTPResponse.Status {
        switch self {
        case .noRow: return .notFound
        case .attachmentsNotAllowedInCSV: return .notAcceptable
        }
    }

    public var responseBody: [UInt8] {
        switch self {
        case .noRow: return ErrorResponse(status: .notFound, message: "not found").body
        case .attachmentsNotAllowedInCSV: return ErrorResponse(status: .notAcceptable, message: self.description).body
        }
    }
}

extension HTTPResponse.Status {
    /// 507 Insufficient Storage (RFC 4918): the server cannot store what the request needs.
    /// swift-http-types has no name for it.
    static var insufficientStorage: Self { .init(code: 507, reasonPhrase: "Insufficient Storage") }
}
