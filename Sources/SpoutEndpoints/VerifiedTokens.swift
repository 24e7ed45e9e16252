import Synchronization

/// The tokens whose signature verified, so that using one again skips the signature check
/// (``TokenVerifier`` still checks its times, issuer and audience on every use).
///
/// Contract:
/// - Bounded both by count (``capacity``) and by bytes (``byteBudget``, counting each token's
///   text twice: its text and its claims): when the next token would pass either, every token
///   is forgotten at once and the next is the first. A token larger than
///   ``largestRemembered`` is never remembered (it is verified on every use).
/// - Keyed by the token's one canonical spelling (``TokenText``), so its other spellings are
///   the same entry, never one each.
final class VerifiedTokens: Sendable {
    struct Entry: Sendable {
        var claims: TokenClaims
        /// The algorithm its header named.
        var algorithm: String
        /// The `kid` its header named.
        var kid: String?
        /// ``JWKSKeySource/generation`` at verification; nil for an HMAC token.
        var generation: Int?
    }

    private struct State: Sendable {
        var entries: [String: Entry] = [:]
        var bytes = 0
    }

    let capacity: Int
    let byteBudget: Int
    let largestRemembered: Int
    private let state = Mutex(State())

    init(capacity: Int, byteBudget: Int, largestRemembered: Int) {
        self.capacity = capacity
        self.byteBudget = byteBudget
        self.largestRemembered = largestRemembered
    }

    /// The entry of `token` (spelled as received), if its canonical spelling is remembered.
    func entry(for token: String) -> Entry? {
        if let entry = self.state.withLock({ $0.entries[token] }) { return entry }
        // The one other spelling a verifying token can have: an ECDSA signature with high S.
        guard let canonical = Self.lowSSpelling(of: token), let entry = self.state.withLock({ $0.entries[canonical] }),
            entry.algorithm.hasPrefix("ES")
        else { return nil }
        return entry
    }

    /// Remembers `entry` for `token`, whose signature verified with `entry.algorithm`.
    func remember(_ entry: Entry, for token: String) {
        let cost = token.utf8.count * 2
        guard token.utf8.count <= self.largestRemembered else { return }
        let key = entry.algorithm.hasPrefix("ES") ? (Self.lowSSpelling(of: token) ?? token) : token
        self.state.withLock { state in
            if state.entries.count >= self.capacity || state.bytes + cost > self.byteBudget {
                state.entries.removeAll(keepingCapacity: true)
                state.bytes = 0
            }
            if state.entries.updateValue(entry, forKey: key) == nil { state.bytes += cost }
        }
    }

    /// How many tokens, and how many bytes of them, are remembered (for tests and metrics).
    var usage: (count: Int, bytes: Int) {
        self.state.withLock { ($0.entries.count, $0.bytes) }
    }

    /// `token` with its signature in low-S form, when it is an ES256 or ES384 signature with
    /// high S; nil otherwise.
    private static func lowSSpelling(of token: String) -> String? {
        guard let dot = token.utf8.lastIndex(of: UInt8(ascii: ".")) else { return nil }
        let signatureText = token[token.utf8.index(after: dot)...]
        guard signatureText.utf8.count == 86 || signatureText.utf8.count == 128,
            let signature = TokenText.decoded(signatureText), let low = TokenText.lowS(signature)
        else { return nil }
        return String(token[...dot]) + PageCursor.base64URL(low)
    }
}
