import Crypto
import Foundation
import JWTKit
import Testing

@testable import SpoutEndpoints

/// What an outside attacker tried against the verifier (issue #59): forged tokens that must
/// change nothing, tokens that must have one spelling, extensions and repeated members that
/// must be refused, tokens that must end, and a memo that must stay small.
@Suite("Token hardening")
struct TokenHardeningTests {
    static let fixtures = TokenVerifierTests.fixtures

    static func reason(_ result: Result<TokenClaims, TokenVerifier.TokenRejection>) -> String? {
        TokenVerifierTests.reason(result)
    }

    /// The fixtures' RSA key published without `alg`, as Microsoft Entra ID publishes its keys.
    static func jwksWithoutAlgorithm(_ fixtures: TokenFixtures, extra: String = "") throws -> String {
        let rsa = try JWTKit.Insecure.RSA.PublicKey(pem: fixtures.rsaBacking.publicKey.pemRepresentation).getKeyPrimitives()
        return #"{"keys":[{"kty":"RSA","n":"\#(rsa.modulus.base64URL)","e":"\#(rsa.publicExponent.base64URL)","kid":"entra","use":"sig"}\#(extra)]}"#
    }

    /// `claims` signed with the fixtures' RSA key under kid `entra`, RS256 or PS256.
    static func signedByEntra(_ fixtures: TokenFixtures, algorithm: String, claims: [String: ClaimValue]) async throws -> String {
        let keys = JWTKeyCollection()
        if algorithm == "PS256" {
            await keys.add(pss: fixtures.rsa, digestAlgorithm: .sha256, kid: "entra")
        } else {
            await keys.add(rsa: fixtures.rsa, digestAlgorithm: .sha256, kid: "entra")
        }
        return try await keys.sign(TokenClaims(claims), kid: JWKIdentifier(string: "entra"))
    }

    /// A token with exactly this header and payload text, HS256-signed with the fixtures' secret.
    static func hmacSigned(header: String, payload: String) -> String {
        let input = Data(header.utf8).base64URL + "." + Data(payload.utf8).base64URL
        let mac = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: SymmetricKey(data: Data(TokenFixtures.secret.utf8)))
        return input + "." + Data(mac).base64URL
    }

    @Test("a forged token naming another algorithm for a key without alg changes nothing: the key's RS256 and PS256 tokens still verify")
    func forgedAlgorithmLocksNothing() async throws {
        let fixtures = try Self.fixtures.get()
        let verifier = try TokenVerifier(identity: .init(), secret: nil, jwks: try Self.jwksWithoutAlgorithm(fixtures))
        let claims = TokenFixtures.claims(sub: "ann")
        let good = try await Self.signedByEntra(fixtures, algorithm: "RS256", claims: claims)
        let parts = good.split(separator: ".").map(String.init)
        // First a forgery: PS256 in the header, garbage for a signature.
        let forged = Data(#"{"alg":"PS256","kid":"entra","typ":"JWT"}"#.utf8).base64URL + "." + parts[1] + "." + Data(repeating: 7, count: 256).base64URL
        #expect(Self.reason(await verifier.verify(forged)) == "bad signature")
        // Then the key's real tokens, in both algorithms it can serve.
        #expect(Self.reason(await verifier.verify(good)) == nil)
        let pss = try await Self.signedByEntra(fixtures, algorithm: "PS256", claims: claims)
        #expect(Self.reason(await verifier.verify(pss)) == nil)
        #expect(Self.reason(await verifier.verify(good)) == nil)
    }

    @Test("a JWKS key that cannot be used is skipped, and its tokens are told why")
    func unusableKey() async throws {
        let fixtures = try Self.fixtures.get()
        // A 1,024-bit modulus (its top bit set).
        let short = Data([0xC1] + (1..<128).map { UInt8(truncatingIfNeeded: $0 &* 37) }).base64URL
        let jwks = try Self.jwksWithoutAlgorithm(fixtures, extra: #",{"kty":"RSA","n":"\#(short)","e":"AQAB","kid":"short","alg":"RS256"}"#)
        let verifier = try TokenVerifier(identity: .init(), secret: nil, jwks: jwks)
        let good = try await Self.signedByEntra(fixtures, algorithm: "RS256", claims: TokenFixtures.claims(sub: "ann"))
        let parts = good.split(separator: ".").map(String.init)
        let naming = Data(#"{"alg":"RS256","kid":"short"}"#.utf8).base64URL + "." + parts[1] + "." + parts[2]
        #expect(Self.reason(await verifier.verify(naming)) == "the key 'short' cannot be used: an RSA key of 1024 bits (at least 2048 are needed)")
        #expect(Self.reason(await verifier.verify(good)) == nil)
        #expect(JWKSKeys.bits(ofBase64URL: short) == 1_024)
    }

    @Test("critical extensions and unencoded payloads are refused", arguments: [
        (#"{"alg":"HS256","crit":["exp"]}"#, "the token's header names critical extensions (crit), which are not supported"),
        (#"{"alg":"HS256","b64":false,"crit":["b64"]}"#, "the token's header names critical extensions (crit), which are not supported"),
        (#"{"alg":"HS256","b64":false}"#, "unencoded payloads (b64) are not supported"),
        (#"{"alg":"HS256","crit":[]}"#, "the token's header names critical extensions (crit), which are not supported"),
    ])
    func criticalExtensions(_ header: String, expected: String) async throws {
        let verifier = try Self.fixtures.get().verifier()
        let payload = #"{"sub":"ann","exp":\#(Int64(Date().timeIntervalSince1970) + 3600)}"#
        let token = Self.hmacSigned(header: header, payload: payload)
        #expect(Self.reason(await verifier.verify(token)) == expected)
        // The same claims under a plain header verify: only the extension is refused.
        #expect(Self.reason(await verifier.verify(Self.hmacSigned(header: #"{"alg":"HS256"}"#, payload: payload))) == nil)
    }

    @Test("a member named twice in the header or the payload is refused, escapes decoded", arguments: [
        (#"{"alg":"HS256"}"#, #"{"sub":"Harold","sub":"Gwen"}"#, "sub"),
        (#"{"alg":"HS256"}"#, #"{"sub":"Harold","s\u0075b":"Gwen"}"#, "sub"),
        (#"{"alg":"HS256","alg":"HS256"}"#, #"{"sub":"Harold"}"#, "alg"),
        (#"{"alg":"HS256"}"#, #"{"sub":"Harold","address":{"city":"A","city":"B"}}"#, "city"),
    ])
    func repeatedMembers(_ header: String, _ payload: String, name: String) async throws {
        let verifier = try Self.fixtures.get().verifier()
        let reason = Self.reason(await verifier.verify(Self.hmacSigned(header: header, payload: payload)))
        #expect(reason == "malformed token: the member '\(name)' appears twice")
    }

    @Test("the repeated-name scanner: objects at any depth, arrays, escapes, and nothing for what is not JSON")
    func repeatedNameScanner() {
        func find(_ json: String) -> String? { RepeatedMemberName.find(in: Array(json.utf8)) }
        #expect(find(#"{"a":1,"b":[{"c":1},{"c":2}],"d":{"e":{"f":null}}}"#) == nil)
        #expect(find(#"{"a":[{"x":1,"x":2}]}"#) == "x")
        #expect(find(#" { "a" : "\"" , "a" : 2 } "#) == "a")
        #expect(find(#"{"\ud83d\ude00":1,"😀":2}"#) == "😀")
        #expect(find(#"{"a":1,"A":2}"#) == nil)
        #expect(find(#"{"a":1,"#) == nil)
        #expect(find(String(repeating: "[", count: 100) + #"{"a":1,"a":2}"# + String(repeating: "]", count: 100)) == nil)
    }

    @Test("a token has one spelling: padding and spare bits are refused, and an ES256 signature's high-S twin is the same remembered token")
    func oneSpelling() async throws {
        let fixtures = try Self.fixtures.get()
        let verifier = try fixtures.verifier()
        let token = try await fixtures.sign(TokenFixtures.claims(sub: "ann"))
        #expect(Self.reason(await verifier.verify(token)) == nil)
        let refusal = "malformed token: its parts are not canonical base64url (no padding, no bits set past the data)"
        #expect(Self.reason(await verifier.verify(token + "=")) == refusal)
        // An HS256 signature is 32 bytes in 43 characters: the last one carries 2 spare bits.
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let last = alphabet.firstIndex(of: token.last!)!
        let spare = String(token.dropLast()) + String(alphabet[last ^ 1])
        #expect(Self.reason(await verifier.verify(spare)) == refusal)
        let parts = token.split(separator: ".").map(String.init)
        #expect(Self.reason(await verifier.verify(parts[0] + "=." + parts[1] + "." + parts[2])) == refusal)

        // ES256: (r, n - s) verifies whenever (r, s) does; the memo holds one entry for both.
        let fresh = try fixtures.verifier()
        let es = try await fixtures.sign(TokenFixtures.claims(sub: "ann"), algorithm: "ES256")
        let esParts = es.split(separator: ".").map(String.init)
        let signature = try #require(TokenText.decoded(Substring(esParts[2])))
        // The other spelling: the low-S twin of a high signature, the high twin of a low one.
        let other = TokenText.lowS(signature) ?? Self.complement(signature)
        #expect(TokenText.lowS(other) == nil || TokenText.lowS(other) == signature)
        let twin = esParts[0] + "." + esParts[1] + "." + PageCursor.base64URL(other)
        #expect(twin != es)
        #expect(Self.reason(await fresh.verify(es)) == nil)
        #expect(Self.reason(await fresh.verify(twin)) == nil)
        #expect(fresh.rememberedUsage.count == 1)
    }

    /// (r, n - s) for an ES256 signature `r || s`.
    static func complement(_ signature: [UInt8]) -> [UInt8] {
        let order: [UInt8] = [
            0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
            0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
        ]
        var result = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for index in (0..<32).reversed() {
            var difference = Int(order[index]) - Int(signature[32 + index]) - borrow
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += 256 }
            result[index] = UInt8(difference)
        }
        return Array(signature[..<32]) + result
    }

    @Test("canonical base64url round-trips, and refuses what a lenient decoder takes")
    func base64URL() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 53 &+ 7) }
            let text = PageCursor.base64URL(bytes)
            #expect(text == Data(bytes).base64URL)
            #expect(TokenText.decoded(Substring(text)) == bytes)
        }
        #expect(TokenText.decoded("eA") == Array("x".utf8))
        #expect(TokenText.decoded("eB") == nil)
        #expect(TokenText.decoded("eB", canonical: false) == Array("x".utf8))
        #expect(TokenText.decoded("eA==") == nil)
        #expect(TokenText.decoded("e+A") == nil)
        #expect(TokenText.decoded("eHk") == Array("xy".utf8))
        #expect(TokenText.decoded("eAeAe") == nil)
    }

    @Test("a token without exp lives identity.maxLifetimeSeconds after its iat; one with neither is refused; 0 lifts the limit")
    func maximumLifetime() async throws {
        let fixtures = try Self.fixtures.get()
        let now = Int64(Date().timeIntervalSince1970)
        let old = try await fixtures.sign(["sub": "ann", "iat": .integer(now - 2 * 86_400)])
        let recent = try await fixtures.sign(["sub": "ann", "iat": .integer(now - 60)])
        let timeless = try await fixtures.sign(["sub": "ann"])
        let longLived = try await fixtures.sign(["sub": "ann", "iat": .integer(now - 2 * 86_400), "exp": .integer(now + 3600)])
        let verifier = try fixtures.verifier()
        #expect(Self.reason(await verifier.verify(old)) == "expired token (no exp; older than identity.maxLifetimeSeconds)")
        #expect(Self.reason(await verifier.verify(recent)) == nil)
        #expect(Self.reason(await verifier.verify(timeless)) == "a token without exp must carry iat (identity.maxLifetimeSeconds)")
        #expect(Self.reason(await verifier.verify(longLived)) == nil)
        var unlimited = SpoutConfiguration.Identity()
        unlimited.maxLifetimeSeconds = 0
        #expect(Self.reason(try await fixtures.verifier(unlimited).verify(old)) == nil)
        #expect(Self.reason(try await fixtures.verifier(unlimited).verify(timeless)) == nil)
    }

    @Test("remembered tokens are bounded by bytes, and a very large token is never remembered")
    func memoBoundedByBytes() async throws {
        let fixtures = try Self.fixtures.get()
        let verifier = try fixtures.verifier()
        let padding = String(repeating: "p", count: 15_000)
        for index in 0..<600 {
            var claims = TokenFixtures.claims(sub: "user\(index)")
            claims["padding"] = .string(padding)
            let token = try await fixtures.sign(claims)
            #expect(Self.reason(await verifier.verify(token)) == nil)
            #expect(verifier.rememberedUsage.bytes <= TokenVerifier.rememberedBytes)
        }
        let huge = Self.reason(await verifier.verify(try await fixtures.sign(
            TokenFixtures.claims(sub: "big", extra: ["padding": .string(String(repeating: "q", count: 20_000))]))))
        #expect(huge == nil)
        let afterHuge = verifier.rememberedUsage
        #expect(afterHuge.bytes <= TokenVerifier.rememberedBytes && afterHuge.count < 600)
    }
}

/// A hostile client's battery against the verifier: every way an attacker would bend a valid
/// token. Each must be refused, none may change what later tokens get: afterwards every
/// algorithm's valid token still verifies.
enum HostileTokens {
    /// Forgeries made from `good` (a valid token) and the fixtures.
    static func forgeries(from good: String, fixtures: TokenFixtures) async throws -> [(label: String, token: String)] {
        let parts = good.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let payload = parts[1]
        func header(_ json: String) -> String { Data(json.utf8).base64URL }
        let garbage = Data(repeating: 0x41, count: 64).base64URL
        var forgeries: [(String, String)] = [
            ("alg none", header(#"{"alg":"none"}"#) + "." + payload + "."),
            ("alg None", header(#"{"alg":"None"}"#) + "." + payload + "."),
            ("alg nOnE with a signature", header(#"{"alg":"nOnE"}"#) + "." + payload + "." + parts[2]),
            ("alg missing", header(#"{"typ":"JWT"}"#) + "." + payload + "." + parts[2]),
            ("alg a number", header(#"{"alg":256}"#) + "." + payload + "." + parts[2]),
            ("alg unknown", header(#"{"alg":"HS1024"}"#) + "." + payload + "." + parts[2]),
            ("embedded jwk", header(#"{"alg":"RS256","jwk":{"kty":"oct","k":"AAAA"}}"#) + "." + payload + "." + garbage),
            ("jku elsewhere", header(#"{"alg":"RS256","jku":"http://127.0.0.1:1/keys"}"#) + "." + payload + "." + garbage),
            ("x5u elsewhere", header(#"{"alg":"RS256","x5u":"http://127.0.0.1:1/cert"}"#) + "." + payload + "." + garbage),
            ("kid path traversal", header(#"{"alg":"HS256","kid":"../../../../dev/null"}"#) + "." + payload + "." + garbage),
            ("kid injection", header(#"{"alg":"RS256","kid":"x' OR '1'='1"}"#) + "." + payload + "." + garbage),
            ("kid of another algorithm", header(#"{"alg":"ES256","kid":"rs"}"#) + "." + payload + "." + garbage),
            ("crit", header(#"{"alg":"HS256","crit":["exp"]}"#) + "." + payload + "." + parts[2]),
            ("header not JSON", header("not json") + "." + payload + "." + parts[2]),
            ("header an array", header("[1,2]") + "." + payload + "." + parts[2]),
            ("payload not JSON", parts[0] + "." + Data("nope".utf8).base64URL + "." + parts[2]),
            ("payload swapped", parts[0] + "." + Data(#"{"sub":"admin","role":"admin"}"#.utf8).base64URL + "." + parts[2]),
            ("signature removed", parts[0] + "." + payload + "."),
            ("signature truncated", parts[0] + "." + payload + "." + String(parts[2].dropLast(4))),
            ("padding", good + "=="),
            ("standard base64", good.replacing("-", with: "+").replacing("_", with: "/") + (good.contains("-") || good.contains("_") ? "" : "+")),
            ("four parts", good + ".e30"),
            ("two parts", parts[0] + "." + payload),
            ("blanks inside", parts[0] + ". " + payload + "." + parts[2]),
            ("NUL inside", parts[0] + "." + payload + "\u{0}." + parts[2]),
            ("huge header", header(#"{"alg":"HS256","x":""# + String(repeating: "a", count: 50_000) + #""}"#) + "." + payload + "." + parts[2]),
            ("deep header", header(String(repeating: "[", count: 5_000)) + "." + payload + "." + parts[2]),
            ("duplicate sub", parts[0] + "." + Data(#"{"sub":"Harold","sub":"Gwen"}"#.utf8).base64URL + "." + parts[2]),
            ("exp a string", try await fixtures.sign(["sub": "ann", "exp": .string("never")])),
            ("nbf in the future", try await fixtures.sign(["sub": "ann", "exp": .integer(Int64(Date().timeIntervalSince1970) + 60), "nbf": .integer(Int64(Date().timeIntervalSince1970) + 3600)])),
        ]
        // HS/RS confusion: HS256 with the RSA public key's PEM as the secret.
        let confused = JWTKeyCollection()
        await confused.add(hmac: HMACKey(from: fixtures.rsaBacking.publicKey.pemRepresentation), digestAlgorithm: .sha256)
        forgeries.append(("HS/RS confusion", try await confused.sign(TokenClaims(TokenFixtures.claims(sub: "admin")), kid: JWKIdentifier(string: "rs"))))
        // Every algorithm's header on the good payload, with the good signature.
        for algorithm in TokenVerifier.supportedAlgorithms {
            forgeries.append(("\(algorithm) header, HS256 signature", header(#"{"alg":"\#(algorithm)","kid":"rs"}"#) + "." + payload + "." + parts[2]))
        }
        return forgeries
    }
}

extension TokenHardeningTests {
    @Test("a hostile client's forgeries are each refused, and afterwards every algorithm's valid token still verifies")
    func hostileBattery() async throws {
        let fixtures = try Self.fixtures.get()
        let verifier = try fixtures.verifier()
        let good = try await fixtures.sign(TokenFixtures.claims(sub: "ann"))
        for (label, token) in try await HostileTokens.forgeries(from: good, fixtures: fixtures) {
            #expect(Self.reason(await verifier.verify(token)) != nil, "\(label) verified")
        }
        for algorithm in TokenVerifier.supportedAlgorithms {
            let token = try await fixtures.sign(TokenFixtures.claims(sub: "ann"), algorithm: algorithm)
            #expect(Self.reason(await verifier.verify(token)) == nil, "\(algorithm) no longer verifies")
        }
    }
}
