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
    /// Both are read in the value's UTF-8 bytes (the scheme is ASCII, any case; blanks are
    /// spaces and tabs): a token is a few hundred bytes that every covered request presents.
    public static func credential(authorization: String?, apiKey: String?) -> String? {
        if var authorization {
            let token = authorization.withUTF8 { bytes -> String? in
                let value = Self.withoutBlanks(bytes)
                let scheme = Self.bearerScheme
                // The scheme (a letter OR 0x20 is its lowercase), a blank, then the token.
                guard value.count > scheme.count, isBlank(value[value.startIndex + scheme.count]) else { return nil }
                for (offset, letter) in scheme.enumerated() where value[value.startIndex + offset] | 0x20 != letter {
                    return nil
                }
                return Self.text(Self.withoutBlanks(UnsafeBufferPointer(rebasing: value[(value.startIndex + scheme.count)...])))
            }
            if let token { return token }
        }
        if var apiKey {
            return apiKey.withUTF8 { Self.text(Self.withoutBlanks($0)) }
        }
        return nil
    }

    private static let bearerScheme: [UInt8] = Array("bearer".utf8)

    /// `bytes` as a string; nil when there are none.
    private static func text(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> String? {
        bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }

    /// `bytes` without leading and trailing spaces and tabs.
    private static func withoutBlanks(_ bytes: UnsafeBufferPointer<UInt8>) -> Slice<UnsafeBufferPointer<UInt8>> {
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end && isBlank(bytes[start]) { start += 1 }
        while end > start && isBlank(bytes[end - 1]) { end -= 1 }
        return bytes[start..<end]
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

extension StringProtocol where UTF8View: BidirectionalCollection {
    /// The text without leading and trailing spaces and tabs. Both are ASCII, so the UTF-8
    /// bytes are cut where they are, with no character walked (header values, tokens).
    var trimmingBlanks: String {
        let bytes = self.utf8
        guard let first = bytes.firstIndex(where: { !isBlank($0) }), let last = bytes.lastIndex(where: { !isBlank($0) }) else {
            return ""
        }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}

/// A blank of a header value: a space or a tab (the one rule of this file's trimming).
@inline(__always)
private func isBlank(_ byte: UInt8) -> Bool {
    byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
}
