import Foundation
import JWTKit
import SpoutCore

/// Verifies bearer tokens (JWT) with jwt-kit and returns their claims.
///
/// Rules callers may rely on:
/// - HS256, HS384 and HS512 tokens are verified only with the configured secret, every other
///   algorithm only with a key of the JWKS file or URL (``JWKSKeySource``): a public RSA key can
///   never serve as an HMAC secret (HS/RS confusion), whatever the token's header says.
/// - The header's `alg` must be in the allowed list and be the algorithm of the key that
///   verifies; `alg: none` is always refused.
/// - `exp` and `nbf`, when present, are checked with ``leeway``; a token without `exp` lives
///   ``maximumLifetime`` after its `iat` (one with neither is refused), unless that is 0;
///   `iss` and `aud` are checked when the configuration names an issuer or audience.
/// - A token has one spelling: its parts are canonical base64url, its header and payload
///   name no member twice, and a header with `crit` or `b64` is refused (no extension is
///   understood). Nothing in a token changes a key: each key's algorithms are fixed when it
///   is loaded (``JWKSKeys``).
/// - A refusal (``TokenRejection``) says why in words that never contain the token or a key.
/// - A token whose signature verified is remembered (``VerifiedTokens``: at most
///   ``rememberedTokens`` and ``rememberedBytes``): using it again checks its times, issuer
///   and audience but not its signature, until the keys of the JWKS URL change.
public final class TokenVerifier: Sendable {
    /// Every algorithm this verifier knows.
    public static let supportedAlgorithms = ["HS256", "HS384", "HS512", "RS256", "PS256", "ES256", "ES384", "EdDSA"]

    /// The HMAC algorithms, verified with the secret.
    static let hmacAlgorithms: [String: DigestAlgorithm] = ["HS256": .sha256, "HS384": .sha384, "HS512": .sha512]

    /// The shortest secret of each HMAC algorithm, in bytes (its digest's size).
    static let minimumSecretBytes = ["HS256": 32, "HS384": 48, "HS512": 64]

    /// The algorithms accepted.
    public let algorithms: Set<String>
    public let leeway: Double
    public let issuer: String?
    public let audience: String?
    /// Whether an HMAC secret is configured.
    public let hasSecret: Bool
    /// The keys of the JWKS file and the JWKS URL (RS, PS, ES and EdDSA tokens).
    public let publicKeys: JWKSKeySource
    /// Whether a JWKS URL is configured.
    public let hasKeyURL: Bool
    /// The API keys that carry an identity (`identity.apiKeys`).
    public let apiKeys: IdentityKeys
    /// One collection per HMAC algorithm, the secret its only key.
    private let hmacKeys: Task<[String: JWTKeyCollection], Never>
    /// Tokens whose signature verified, with the generation of ``publicKeys`` they verified
    /// under: a remembered token skips the signature check (its times, issuer and audience
    /// are checked on every use).
    private let verified = VerifiedTokens(
        capacity: TokenVerifier.rememberedTokens, byteBudget: TokenVerifier.rememberedBytes, largestRemembered: 16_384)
    /// Seconds a token without `exp` lives after its `iat` (`identity.maxLifetimeSeconds`); 0:
    /// no limit.
    public let maximumLifetime: Double

    /// How many verified tokens are remembered at most.
    public static let rememberedTokens = 4_096
    /// How many bytes of verified tokens are remembered at most (each counted twice: its text
    /// and its claims).
    public static let rememberedBytes = 8 << 20

    /// How many verified tokens are remembered now, and their bytes.
    var rememberedUsage: (count: Int, bytes: Int) { self.verified.usage }

    /// Why a token was refused (401 `invalid_token`).
    public struct TokenRejection: Error, Sendable, Hashable {
        public var reason: String
    }

    /// A verifier for `identity`'s settings.
    /// - Parameters:
    ///   - secret: the HMAC secret (from the variable the settings name), nil for none.
    ///   - jwks: the JWKS file's text, nil for none; it must decode (checked here).
    ///   - fetchKeys: how the keys of `identity.jwksUrl` are fetched; nil for none.
    ///   - apiKeys: the API keys that carry an identity.
    public init(
        identity: SpoutConfiguration.Identity, secret: String?, jwks: String?, fetchKeys: JWKSKeySource.Fetch? = nil,
        apiKeys: IdentityKeys = IdentityKeys([], keys: [], roleClaim: "role")
    ) throws {
        self.algorithms = Set(identity.algorithms)
        self.leeway = Double(identity.leewaySeconds)
        self.maximumLifetime = Double(identity.maxLifetimeSeconds)
        self.issuer = identity.issuer.isEmpty ? nil : identity.issuer
        self.audience = identity.audience.isEmpty ? nil : identity.audience
        self.hasSecret = secret != nil
        self.hasKeyURL = fetchKeys != nil
        self.apiKeys = apiKeys
        let decoded = try jwks.map { try JSONDecoder().decode(JWKS.self, from: Data($0.utf8)) }
        self.publicKeys = JWKSKeySource(
            fileKeys: decoded, fetch: fetchKeys,
            policy: JWKSRefreshPolicy(
                refreshInterval: .seconds(identity.jwksRefreshSeconds), cooldown: .seconds(identity.jwksCooldownSeconds)))
        self.hmacKeys = Task {
            var collections: [String: JWTKeyCollection] = [:]
            if let secret {
                // An HMAC key is at least as long as the digest (jwt-kit asserts it): HS384 needs
                // 48 bytes, HS512 64; a shorter secret verifies HS256 only.
                for (name, digest) in Self.hmacAlgorithms where secret.utf8.count >= Self.minimumSecretBytes[name, default: 64] {
                    collections[name] = await JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: digest)
                }
            }
            return collections
        }
    }

    /// How many keys of the JWKS file and URL are held now.
    public var jwksKeyCount: Int { self.publicKeys.identifiers.count }

    /// The claims of `token` when it verifies; otherwise why not.
    public func verify(_ token: String, now: Date = Date()) async -> Result<TokenClaims, TokenRejection> {
        // A remembered token skips its header and signature (both were checked, against the
        // same settings); asking for its keys is what fetches the JWKS URL when due, and keys
        // of another generation send it through the whole check again.
        if let remembered = self.verified.entry(for: token) {
            let current = remembered.generation == nil ? true : await self.publicKeys.keys(for: remembered.kid).generation == remembered.generation
            if current { return self.check(remembered.claims, now: now) }
        }
        func reject(_ reason: String) -> Result<TokenClaims, TokenRejection> { .failure(TokenRejection(reason: reason)) }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
            return reject("malformed token: a JWT is three base64url parts separated by dots")
        }
        guard let headerBytes = TokenText.decoded(parts[0]), let payloadBytes = TokenText.decoded(parts[1]),
            TokenText.decoded(parts[2]) != nil
        else { return reject("malformed token: its parts are not canonical base64url (no padding, no bits set past the data)") }
        if let name = RepeatedMemberName.find(in: headerBytes) ?? RepeatedMemberName.find(in: payloadBytes) {
            return reject("malformed token: the member \(Self.quoted(name)) appears twice")
        }
        guard let header = try? JSONDecoder().decode([String: ClaimValue].self, from: Data(headerBytes)) else {
            return reject("malformed token: its header is not base64url-encoded JSON")
        }
        guard case .string(let algorithm)? = header["alg"] else { return reject("malformed token: its header names no algorithm") }
        if algorithm.lowercased() == "none" { return reject("unsigned tokens (alg none) are not accepted") }
        guard self.algorithms.contains(algorithm) else {
            return reject("algorithm \(algorithm) is not accepted (accepted: \(self.algorithms.sorted().joined(separator: ", ")))")
        }
        // RFC 7515 §4.1.11: extensions named critical must be understood, and Spout
        // understands none; `b64` changes what is signed (RFC 7797) and is refused even
        // where it is not named critical.
        if header["crit"] != nil { return reject("the token's header names critical extensions (crit), which are not supported") }
        if header["b64"] != nil { return reject("unencoded payloads (b64) are not supported") }
        guard !parts[2].isEmpty else { return reject("malformed token: it has no signature") }
        let kidText: String? = if case .string(let text)? = header["kid"] { text } else { nil }
        let collection: JWTKeyCollection
        var generation: Int?
        if Self.hmacAlgorithms[algorithm] != nil {
            guard let hmac = await self.hmacKeys.value[algorithm] else {
                return reject("no key to verify \(algorithm) tokens is configured")
            }
            collection = hmac
        } else {
            let keys = await self.publicKeys.keys(for: kidText)
            if let kidText, let reason = keys.unusable[kidText] {
                return reject("the key \(Self.quoted(kidText)) cannot be used: \(reason)")
            }
            if let kidText, !keys.identifiers.contains(kidText) {
                return reject(self.hasKeyURL ? "unknown key id (kid) \(Self.quoted(kidText))" : "no key to verify \(algorithm) tokens is configured")
            }
            guard let served = keys.byAlgorithm[algorithm], kidText.map({ served.identifiers.contains($0) }) ?? true else {
                return reject(kidText == nil ? "no key to verify \(algorithm) tokens is configured" : "the token's algorithm \(algorithm) is not its key's")
            }
            collection = served.collection
            generation = keys.generation
        }
        guard let key = try? await collection.getKey(for: kidText.map { JWKIdentifier(string: $0) }, alg: algorithm) else {
            return reject("no key to verify \(algorithm) tokens is configured")
        }
        guard key.name == algorithm else { return reject("the token's algorithm \(algorithm) is not its key's") }
        let claims: TokenClaims
        do {
            claims = try await collection.verify(token, as: TokenClaims.self)
        } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
            return reject("bad signature")
        } catch {
            return reject("the token does not verify or its payload is not a JSON object")
        }
        self.verified.remember(.init(claims: claims, algorithm: algorithm, kid: kidText, generation: generation), for: token)
        return self.check(claims, now: now)
    }

    /// `claims` when their times, issuer and audience pass; otherwise why not.
    private func check(_ claims: TokenClaims, now: Date) -> Result<TokenClaims, TokenRejection> {
        func reject(_ reason: String) -> Result<TokenClaims, TokenRejection> { .failure(TokenRejection(reason: reason)) }
        let seconds = now.timeIntervalSince1970
        if let notBefore = claims.claims["nbf"] {
            guard let value = notBefore.seconds else { return reject("malformed token: nbf is not a number") }
            if seconds + self.leeway < value { return reject("token not valid yet (nbf)") }
        }
        if let issuer = self.issuer, claims.claims["iss"] != .string(issuer) {
            return reject("wrong issuer (iss)")
        }
        if let audience = self.audience {
            switch claims.claims["aud"] {
            case .string(audience)?: break
            case .array(let items)? where items.contains(.string(audience)): break
            default: return reject("wrong audience (aud)")
            }
        }
        // Expiry last: a token that is wrong in other ways says so first.
        if let expiry = claims.claims["exp"] {
            guard let value = expiry.seconds else { return reject("malformed token: exp is not a number") }
            if seconds > value + self.leeway { return reject("expired token") }
        } else if self.maximumLifetime > 0 {
            // Without exp a token would never end: it lives maximumLifetime from its iat.
            guard let issued = claims.claims["iat"] else {
                return reject("a token without exp must carry iat (identity.maxLifetimeSeconds)")
            }
            guard let value = issued.seconds else { return reject("malformed token: iat is not a number") }
            if seconds > value + self.maximumLifetime + self.leeway { return reject("expired token (no exp; older than identity.maxLifetimeSeconds)") }
        }
        return .success(claims)
    }

    /// Signs `claims` with the HMAC secret (`spout token`, tests); nil without a secret.
    public func signWithSecret(_ claims: TokenClaims, algorithm: String = "HS256") async throws -> String? {
        guard let collection = await self.hmacKeys.value[algorithm] else { return nil }
        return try await collection.sign(claims)
    }

    /// A `kid` as a refusal quotes it: at most 64 visible ASCII characters (it comes from the
    /// caller).
    static func quoted(_ kid: String) -> String {
        let visible = String(String.UnicodeScalarView(kid.unicodeScalars.filter { (0x21...0x7E).contains($0.value) && $0 != "'" }.prefix(64)))
        return "'\(visible)'"
    }
}
