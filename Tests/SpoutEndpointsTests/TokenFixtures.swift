import Crypto
import CryptoExtras
import Foundation
import JWTKit
import SpoutEndpoints

/// Tokens for the identity tests, signed by jwt-kit with keys generated per run: an HMAC
/// secret, and ES256, ES384, EdDSA, RS256 and PS256 keys published in a JWKS document.
struct TokenFixtures: Sendable {
    /// Long enough for HS512 (64 bytes).
    static let secret = "a-test-secret-long-enough-for-hs512-0123456789abcdef0123456789abcdef"

    let es256 = ES256PrivateKey()
    let es384 = ES384PrivateKey()
    let eddsa: EdDSA.PrivateKey
    let rsa: JWTKit.Insecure.RSA.PrivateKey
    let rsaBacking: _RSA.Signing.PrivateKey

    init() throws {
        self.eddsa = try EdDSA.PrivateKey(curve: .ed25519)
        self.rsaBacking = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        self.rsa = try JWTKit.Insecure.RSA.PrivateKey(pem: self.rsaBacking.pemRepresentation)
    }

    /// The public keys as a JWKS document (kids `es256`, `es384`, `ed`, `rs`, `ps`).
    func jwks() throws -> String {
        let es256 = self.es256.parameters!
        let es384 = self.es384.parameters!
        let rsa = try JWTKit.Insecure.RSA.PublicKey(pem: self.rsaBacking.publicKey.pemRepresentation).getKeyPrimitives()
        let ed = self.eddsa.publicKey.rawRepresentation.base64URL
        return """
            {"keys":[
              {"kty":"EC","crv":"P-256","x":"\(es256.x)","y":"\(es256.y)","kid":"es256","alg":"ES256","use":"sig"},
              {"kty":"EC","crv":"P-384","x":"\(es384.x)","y":"\(es384.y)","kid":"es384","alg":"ES384","use":"sig"},
              {"kty":"OKP","crv":"Ed25519","x":"\(ed)","kid":"ed","alg":"EdDSA","use":"sig"},
              {"kty":"RSA","n":"\(rsa.modulus.base64URL)","e":"\(rsa.publicExponent.base64URL)","kid":"rs","alg":"RS256","use":"sig"},
              {"kty":"RSA","n":"\(rsa.modulus.base64URL)","e":"\(rsa.publicExponent.base64URL)","kid":"ps","alg":"PS256","use":"sig"}
            ]}
            """
    }

    /// A verifier with the secret and the JWKS, under `identity` (defaults otherwise).
    func verifier(_ identity: SpoutConfiguration.Identity = .init()) throws -> TokenVerifier {
        try TokenVerifier(identity: identity, secret: Self.secret, jwks: try self.jwks())
    }

    /// `claims` signed with `algorithm` (HS* with the secret, else with the matching key and
    /// its kid).
    func sign(_ claims: [String: ClaimValue], algorithm: String = "HS256") async throws -> String {
        let keys = JWTKeyCollection()
        let kid: String?
        switch algorithm {
        case "HS256": await keys.add(hmac: HMACKey(from: Self.secret), digestAlgorithm: .sha256); kid = nil
        case "HS384": await keys.add(hmac: HMACKey(from: Self.secret), digestAlgorithm: .sha384); kid = nil
        case "HS512": await keys.add(hmac: HMACKey(from: Self.secret), digestAlgorithm: .sha512); kid = nil
        case "ES256": await keys.add(ecdsa: self.es256, kid: "es256"); kid = "es256"
        case "ES384": await keys.add(ecdsa: self.es384, kid: "es384"); kid = "es384"
        case "EdDSA": await keys.add(eddsa: self.eddsa, kid: "ed"); kid = "ed"
        case "RS256": await keys.add(rsa: self.rsa, digestAlgorithm: .sha256, kid: "rs"); kid = "rs"
        case "PS256": await keys.add(pss: self.rsa, digestAlgorithm: .sha256, kid: "ps"); kid = "ps"
        default: preconditionFailure("no key for \(algorithm)")
        }
        return try await keys.sign(TokenClaims(claims), kid: kid.flatMap { JWKIdentifier(string: $0) })
    }

    /// Claims for `sub` that expire in an hour, with `role` when given.
    static func claims(sub: String, role: String? = nil, extra: [String: ClaimValue] = [:]) -> [String: ClaimValue] {
        let now = Int64(Date().timeIntervalSince1970)
        var claims: [String: ClaimValue] = ["sub": .string(sub), "iat": .integer(now), "exp": .integer(now + 3600)]
        if let role { claims["role"] = .string(role) }
        claims.merge(extra) { $1 }
        return claims
    }

    /// A token with a header and payload of our own and the given signature (forgeries).
    static func raw(header: String, payload: String, signature: String) -> String {
        Data(header.utf8).base64URL + "." + Data(payload.utf8).base64URL + "." + signature
    }
}

extension Data {
    /// base64url without padding.
    var base64URL: String {
        self.base64EncodedString().replacing("+", with: "-").replacing("/", with: "_").replacing("=", with: "")
    }
}
