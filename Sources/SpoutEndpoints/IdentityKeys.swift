import SpoutHTTP

/// API keys that carry an identity (`identity.apiKeys`): a service or script that cannot get
/// a token presents a key, and the request runs as the key's subject and role, exactly as a
/// verified token with those claims would (`:claims.sub`, roles, row-level security).
///
/// Contract:
/// - ``identity(of:)`` compares the credential with every key, each in constant time
///   (``ConstantTime``), and decides after the last comparison: the time taken does not tell
///   which key, or which byte of one, differed.
/// - The claims of a key are `sub` (its subject) and, when it has a role, the role claim
///   (`identity.roleClaim`) set to it; nothing else.
/// - Keys never appear in a description, a dump or an error.
public struct IdentityKeys: Sendable, CustomStringConvertible, CustomReflectable {
    /// One key and whom it stands for.
    struct Entry: Sendable {
        var key: [UInt8]
        var claims: TokenClaims
    }

    private let entries: [Entry]

    /// Keys for `apiKeys` (the configuration's entries) with the key of each from `keys`
    /// (the same order); the role goes into the claim named `roleClaim`.
    public init(_ apiKeys: [SpoutConfiguration.Identity.APIKey], keys: [String], roleClaim: String) {
        self.entries = zip(apiKeys, keys).map { entry, key in
            var claims: [String: ClaimValue] = ["sub": .string(entry.subject)]
            if !entry.role.isEmpty { claims[roleClaim] = .string(entry.role) }
            return Entry(key: Array(key.utf8), claims: TokenClaims(claims))
        }
    }

    /// How many keys there are.
    public var count: Int { self.entries.count }

    /// The claims of the key `credential` is, or nil when it is none of them.
    public func identity(of credential: String) -> TokenClaims? {
        let candidate = Array(credential.utf8)
        var found: TokenClaims?
        for entry in self.entries where ConstantTime.equals(candidate, entry.key) {
            // Keys are distinct (checked at load): at most one matches, and the loop goes on.
            found = entry.claims
        }
        return found
    }

    public var description: String { "IdentityKeys(\(self.count) \(self.count == 1 ? "key" : "keys"))" }

    public var customMirror: Mirror { Mirror(self, children: ["count": self.count]) }
}
