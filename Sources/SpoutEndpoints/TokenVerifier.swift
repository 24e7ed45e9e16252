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
/// - `exp` and `nbf`, when present, are checked with ``leeway``; `iss` and `aud` when the
///   configuration names an issuer or audience.
/// - A refusal (``TokenRejection``) says why in words that never contain the token or a key.
/// - A token whose signature verified is remembered (at most ``rememberedTokens``; when that
///   many are, all are forgotten at once): using it again checks its times, issuer and
///   audience but not its signature, until the keys of the JWKS URL change.
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
    private let verified = BoundedCache<String, VerifiedToken>(capacity: TokenVerifier.rememberedTokens)

    /// How many verified tokens are remembered at most.
    public static let rememberedTokens = 4_096

    private struct VerifiedToken: Sendable {
        var claims: TokenClaims
        /// ``JWKSKeySource/generation`` at verification; nil for an HMAC token.
        var generation: Int?
    }

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
        func reject(_ reason: String) -> Result<TokenClaims, TokenRejection> { .failure(TokenRejection(reason: reason)) }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
            return reject("malformed token: a JWT is three base64url parts separated by dots")
        }
        guard let headerBytes = Self.base64URLDecoded(parts[0]),
            let header = try? JSONDecoder().decode([String: ClaimValue].self, from: headerBytes)
        else { return reject("malformed token: its header is not base64url-encoded JSON") }
        guard case .string(let algorithm)? = header["alg"] else { return reject("malformed token: its header names no algorithm") }
        if algorithm.lowercased() == "none" { return reject("unsigned tokens (alg none) are not accepted") }
        guard self.algorithms.contains(algorithm) else {
            return reject("algorithm \(algorithm) is not accepted (accepted: \(self.algorithms.sorted().joined(separator: ", ")))")
        }
        guard !parts[2].isEmpty else { return reject("malformed token: it has no signature") }
        let kidText: String? = if case .string(let text)? = header["kid"] { text } else { nil }
        // The keys come first, also for a remembered token: asking for them is what fetches
        // the JWKS URL again when the policy says so, and a new generation forgets the token.
        let collection: JWTKeyCollection
        var generation: Int?
        if Self.hmacAlgorithms[algorithm] != nil {
            guard let hmac = await self.hmacKeys.value[algorithm] else {
                return reject("no key to verify \(algorithm) tokens is configured")
            }
            collection = hmac
        } else {
            let keys = await self.publicKeys.keys(for: kidText)
            if let kidText, !keys.identifiers.contains(kidText) {
                return reject(self.hasKeyURL ? "unknown key id (kid) \(Self.quoted(kidText))" : "no key to verify \(algorithm) tokens is configured")
            }
            collection = keys.collection
            generation = keys.generation
        }
        let claims: TokenClaims
        if let remembered = self.verified[token], remembered.generation == generation {
            claims = remembered.claims
        } else {
            guard let key = try? await collection.getKey(for: kidText.map { JWKIdentifier(string: $0) }, alg: algorithm) else {
                return reject("no key to verify \(algorithm) tokens is configured")
            }
            guard key.name == algorithm else { return reject("the token's algorithm \(algorithm) is not its key's") }
            do {
                claims = try await collection.verify(token, as: TokenClaims.self)
            } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
                return reject("bad signature")
            } catch {
                return reject("the token does not verify or its payload is not a JSON object")
            }
            self.verified.store(VerifiedToken(claims: claims, generation: generation), for: token)
        }
        let seconds = now.timeIntervalSince1970
        if let expiry = claims.claims["exp"] {
            guard let value = expiry.seconds else { return reject("malformed token: exp is not a number") }
            if seconds > value + self.leeway { return reject("expired token") }
        }
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

    /// base64url without padding, as JWT writes it.
    static func base64URLDecoded(_ text: Substring) -> Data? {
        var base64 = text.replacing("-", with: "+").replacing("_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: String(base64))
    }
}
