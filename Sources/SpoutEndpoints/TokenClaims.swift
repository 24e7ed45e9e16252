import Foundation
import JWTKit
import SpoutCore

/// One JSON value of a token's payload.
public indirect enum ClaimValue: Sendable, Hashable, Codable, ExpressibleByStringLiteral {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([ClaimValue])
    case object([String: ClaimValue])

    public init(stringLiteral value: String) {
        self = .string(value)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let integer = try? container.decode(Int64.self) {
            self = .integer(integer)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([ClaimValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: ClaimValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let bool): try container.encode(bool)
        case .integer(let integer): try container.encode(integer)
        case .number(let number): try container.encode(number)
        case .string(let string): try container.encode(string)
        case .array(let array): try container.encode(array)
        case .object(let object): try container.encode(object)
        }
    }

    /// The value as a statement argument: strings, numbers and booleans as themselves, null
    /// as NULL, arrays and objects as JSON text.
    public var sqlValue: SQLValue {
        switch self {
        case .null: .null
        case .bool(let bool): .bool(bool)
        case .integer(let integer): .integer(integer)
        case .number(let number): .double(number)
        case .string(let string): .text(string)
        case .array, .object: .json(self.jsonText)
        }
    }

    /// Compact JSON with sorted object keys.
    public var jsonText: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }

    /// The seconds of a `NumericDate` claim (`exp`, `nbf`), nil for any other value.
    var seconds: Double? {
        switch self {
        case .integer(let integer): Double(integer)
        case .number(let number): number
        default: nil
        }
    }
}

/// The payload of a verified token: every claim, whatever its name.
///
/// Contract: jwt-kit has checked the signature when a value of this type exists; the time,
/// issuer and audience checks are ``TokenVerifier``'s (they need its settings), so
/// ``verify(using:)`` checks nothing.
public struct TokenClaims: JWTPayload, Sendable, Hashable {
    public let claims: [String: ClaimValue]
    /// The claims as a JSON object with sorted keys (what `request.jwt.claims` is set to),
    /// written once: a remembered token's requests reuse it.
    public let jsonText: String

    public init(_ claims: [String: ClaimValue]) {
        self.claims = claims
        self.jsonText = ClaimValue.object(claims).jsonText
    }

    public init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode([String: ClaimValue].self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(self.claims)
    }

    public func verify(using algorithm: some JWTAlgorithm) async throws {}

    /// The claim at a dotted `path` (`sub`, `address.city`); nil when any step is missing.
    public func value(at path: String) -> ClaimValue? {
        var current: ClaimValue = .object(self.claims)
        for step in path.split(separator: ".", omittingEmptySubsequences: false) {
            guard case .object(let members) = current, let next = members[String(step)] else { return nil }
            current = next
        }
        return current
    }
}
