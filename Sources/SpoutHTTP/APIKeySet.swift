import HTTPTypes

/// The API keys a protected ``Route`` accepts.
///
/// A request presents a key as `Authorization: Bearer <key>` or `X-API-Key: <key>`. Rules
/// callers may rely on:
/// - The bearer credential is used when the `Authorization` header carries one (scheme
///   `Bearer`, any case); otherwise `X-API-Key`. Surrounding blanks are ignored; an empty
///   value counts as absent.
/// - No credential is ``Outcome/missingCredentials`` (401 with `WWW-Authenticate`); a
///   credential that matches no key is ``Outcome/invalidCredentials`` (403).
/// - The credential is compared with every key, each in constant time (``ConstantTime``), and
///   the results are combined after the last comparison: the time taken does not tell which
///   key, or which byte of a key, differed.
/// - The keys never appear in ``description``, `debugDescription`, `dump` or errors.
public struct APIKeySet: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// What a request's credentials amount to.
    public enum Outcome: Sendable, Hashable {
        case granted
        /// Neither header carries a credential: 401.
        case missingCredentials
        /// A credential was sent and matches no key: 403.
        case invalidCredentials
    }

    /// The realm named in `WWW-Authenticate`.
    public static let realm = "spout"

    private let keys: [[UInt8]]

    /// The number of keys accepted.
    public var count: Int { self.keys.count }

    /// A set accepting any of `keys`; nil when there is none (protection needs a key).
    public init?(keys: [String]) {
        let keys = keys.filter { !$0.isEmpty }
        guard !keys.isEmpty else { return nil }
        self.keys = keys.map { Array($0.utf8) }
    }

    /// Checks the credentials of a request with these header values.
    public func check(authorization: String?, apiKey: String?) -> Outcome {
        guard let credential = Self.credential(authorization: authorization, apiKey: apiKey) else {
            return .missingCredentials
        }
        return self.matches(credential) ? .granted : .invalidCredentials
    }

    /// Checks the credentials in `headers` (the first `Authorization` and `X-API-Key` fields).
    public func check(_ headers: HTTPFields) -> Outcome {
        self.check(authorization: headers[values: .authorization].first, apiKey: headers[values: .apiKey].first)
    }

    /// Whether `credential` is one of the keys; every key is compared, in constant time.
    public func matches(_ credential: String) -> Bool {
        let candidate = Array(credential.utf8)
        var matches = 0
        for key in self.keys {
            matches |= ConstantTime.difference(candidate, key) == 0 ? 1 : 0
        }
        return matches != 0
    }

    /// The credential a request presents: the bearer token, else the `X-API-Key` value.
    public static func credential(authorization: String?, apiKey: String?) -> String? {
        if let authorization {
            let trimmed = authorization.trimmingBlanks
            let scheme = "bearer"
            if trimmed.utf8.count > scheme.utf8.count,
                trimmed.prefix(scheme.count).lowercased() == scheme,
                let separator = trimmed.dropFirst(scheme.count).first, separator == " " || separator == "\t"
            {
                let token = trimmed.dropFirst(scheme.count).trimmingBlanks
                if !token.isEmpty { return token }
            }
        }
        if let apiKey {
            let token = apiKey.trimmingBlanks
            if !token.isEmpty { return token }
        }
        return nil
    }

    /// The error response for a refused `outcome`; nil for ``Outcome/granted``.
    public static func errorResponse(for outcome: Outcome) -> ErrorResponse? {
        switch outcome {
        case .granted:
            return nil
        case .missingCredentials:
            return ErrorResponse(
                status: .unauthorized, message: "missing credentials: send Authorization: Bearer <key> or X-API-Key: <key>",
                headers: [.wwwAuthenticate: "Bearer realm=\"\(Self.realm)\""])
        case .invalidCredentials:
            return ErrorResponse(status: .forbidden, message: "invalid credentials")
        }
    }

    public var description: String { "APIKeySet(\(self.count) \(self.count == 1 ? "key" : "keys"))" }

    public var debugDescription: String { self.description }

    public var customMirror: Mirror { Mirror(self, children: ["count": self.count]) }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    var trimmingBlanks: String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return String(slice)
    }
}
