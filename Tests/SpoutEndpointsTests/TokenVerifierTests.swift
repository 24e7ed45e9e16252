import Foundation
import JWTKit
import SpoutEndpoints
import Testing

/// ``TokenVerifier`` on tokens signed by jwt-kit: every supported algorithm verifies, and
/// every kind of bad token is refused with a reason that never holds the token.
@Suite("Token verifier")
struct TokenVerifierTests {
    static let fixtures = Result { try TokenFixtures() }

    static func reason(_ result: Result<TokenClaims, TokenVerifier.TokenRejection>) -> String? {
        if case .failure(let rejection) = result { return rejection.reason }
        return nil
    }

    @Test("each supported algorithm verifies", arguments: TokenVerifier.supportedAlgorithms)
    func verifies(_ algorithm: String) async throws {
        let fixtures = try Self.fixtures.get()
        let token = try await fixtures.sign(TokenFixtures.claims(sub: "ann", role: "editor"), algorithm: algorithm)
        let claims = try await fixtures.verifier().verify(token).get()
        #expect(claims.claims["sub"] == .string("ann"))
        #expect(claims.value(at: "role") == .string("editor"))
    }

    /// Bad tokens and the words of their refusal.
    static let forgeries: [(String, String)] = [
        ("alg none", "unsigned tokens (alg none) are not accepted"),
        ("HS256 signed with the RSA public key (HS/RS confusion)", "bad signature"),
        ("tampered payload", "bad signature"),
        ("expired beyond the leeway", "expired token"),
        ("not valid yet", "token not valid yet (nbf)"),
        ("truncated", "malformed token: a JWT is three base64url parts separated by dots"),
        ("no signature", "malformed token: it has no signature"),
        ("RS256 key, PS256 header", "the token's algorithm PS256 is not its key's"),
    ]

    @Test("bad tokens are refused, and the reason never holds the token", arguments: TokenVerifierTests.forgeries)
    func refused(_ forgery: String, expected: String) async throws {
        let fixtures = try Self.fixtures.get()
        let now = Int64(Date().timeIntervalSince1970)
        let good = try await fixtures.sign(TokenFixtures.claims(sub: "ann"))
        let parts = good.split(separator: ".").map(String.init)
        let token: String
        switch forgery {
        case "alg none":
            token = TokenFixtures.raw(header: #"{"alg":"none","typ":"JWT"}"#, payload: #"{"sub":"ann"}"#, signature: "")
        case "HS256 signed with the RSA public key (HS/RS confusion)":
            let keys = JWTKeyCollection()
            let publicPEM = fixtures.rsaBacking.publicKey.pemRepresentation
            await keys.add(hmac: HMACKey(from: publicPEM), digestAlgorithm: .sha256)
            token = try await keys.sign(TokenClaims(TokenFixtures.claims(sub: "admin")), kid: JWKIdentifier(string: "rs"))
        case "tampered payload":
            token = parts[0] + "." + Data(#"{"sub":"admin"}"#.utf8).base64URL + "." + parts[2]
        case "expired beyond the leeway":
            token = try await fixtures.sign(["sub": "ann", "exp": .integer(now - 31)])
        case "not valid yet":
            token = try await fixtures.sign(["sub": "ann", "nbf": .integer(now + 60)])
        case "truncated":
            token = parts[0] + "." + parts[1]
        case "no signature":
            token = parts[0] + "." + parts[1] + "."
        default:
            let rs = try await fixtures.sign(TokenFixtures.claims(sub: "ann"), algorithm: "RS256").split(separator: ".").map(String.init)
            token = Data(#"{"alg":"PS256","kid":"rs"}"#.utf8).base64URL + "." + rs[1] + "." + rs[2]
        }
        let reason = Self.reason(try await fixtures.verifier().verify(token))
        #expect(reason == expected)
        #expect(reason?.contains(token) != true && reason?.contains(parts[2]) != true)
    }

    @Test("exp within the leeway still verifies; the leeway is configurable")
    func leeway() async throws {
        let fixtures = try Self.fixtures.get()
        let now = Int64(Date().timeIntervalSince1970)
        let token = try await fixtures.sign(["sub": "ann", "exp": .integer(now - 10)])
        #expect(Self.reason(try await fixtures.verifier().verify(token)) == nil)
        var strict = SpoutConfiguration.Identity()
        strict.leewaySeconds = 0
        #expect(Self.reason(try await fixtures.verifier(strict).verify(token)) == "expired token")
    }

    @Test("issuer and audience, when configured, must match")
    func issuerAndAudience() async throws {
        let fixtures = try Self.fixtures.get()
        var identity = SpoutConfiguration.Identity()
        identity.issuer = "https://issuer.example"
        identity.audience = "spout"
        let verifier = try fixtures.verifier(identity)
        let right = try await fixtures.sign(
            TokenFixtures.claims(sub: "ann", extra: ["iss": "https://issuer.example", "aud": .array(["other", "spout"])]))
        #expect(TokenVerifierTests.reason(await verifier.verify(right)) == nil)
        let wrongAudience = try await fixtures.sign(TokenFixtures.claims(sub: "ann", extra: ["iss": "https://issuer.example", "aud": "other"]))
        #expect(TokenVerifierTests.reason(await verifier.verify(wrongAudience)) == "wrong audience (aud)")
        let wrongIssuer = try await fixtures.sign(TokenFixtures.claims(sub: "ann", extra: ["iss": "https://evil.example", "aud": "spout"]))
        #expect(TokenVerifierTests.reason(await verifier.verify(wrongIssuer)) == "wrong issuer (iss)")
    }

    @Test("an algorithm outside identity.algorithms is refused even with a valid signature")
    func disallowedAlgorithm() async throws {
        let fixtures = try Self.fixtures.get()
        var identity = SpoutConfiguration.Identity()
        identity.algorithms = ["ES256"]
        let token = try await fixtures.sign(TokenFixtures.claims(sub: "ann"))
        #expect(Self.reason(try await fixtures.verifier(identity).verify(token)) == "algorithm HS256 is not accepted (accepted: ES256)")
    }

    @Test("without a secret, HS256 tokens are refused")
    func noSecret() async throws {
        let fixtures = try Self.fixtures.get()
        let verifier = try TokenVerifier(identity: .init(), secret: nil, jwks: try fixtures.jwks())
        let token = try await fixtures.sign(TokenFixtures.claims(sub: "ann"))
        #expect(TokenVerifierTests.reason(await verifier.verify(token)) == "no key to verify HS256 tokens is configured")
    }
}

/// The `identity` settings and `auth: {token: jwt}` sections that cannot work stop loading,
/// naming what is wrong and never the secret.
@Suite("Token settings")
struct TokenSettingsTests {
    @Test("a short secret stops the start; no secret and no JWKS is no verifier")
    func secrets() throws {
        let configuration = SpoutConfiguration()
        let short = "a-secret-of-24-bytes-xyz"
        #expect {
            _ = try EndpointSet.tokenVerifier(configuration: configuration, environment: ["SPOUT_JWT_SECRET": short])
        } throws: { error in
            let text = String(describing: error)
            return text.contains("SPOUT_JWT_SECRET holds 24 bytes; an HMAC secret for tokens needs at least 32") && !text.contains(short)
        }
        #expect(try EndpointSet.tokenVerifier(configuration: configuration, environment: [:]) == nil)
        let verifier = try EndpointSet.tokenVerifier(configuration: configuration, environment: ["SPOUT_JWT_SECRET": TokenFixtures.secret])
        #expect(verifier?.hasSecret == true && verifier?.jwksKeyCount == 0)
    }

    @Test("identity.jwksFile: read relative to the configuration file at start; a missing or non-JWKS file stops the start naming it")
    func jwksFile() async throws {
        let fixtures = try TokenFixtures()
        let directory = try TemporaryDirectory()
        _ = try directory.write("keys/jwks.json", try fixtures.jwks())
        _ = try directory.write("keys/not-jwks.json", #"{"keys": "none"}"#)
        func configuration(_ jwksFile: String) throws -> SpoutConfiguration {
            let file = try directory.write("config/spout.yaml", "identity:\n  jwksFile: ../keys/\(jwksFile)\n")
            return try SpoutConfiguration.load(file: file, environment: [:])
        }

        let verifier = try #require(try EndpointSet.tokenVerifier(configuration: try configuration("jwks.json"), environment: [:]))
        #expect(verifier.jwksKeyCount == 5 && !verifier.hasSecret)
        let token = try await fixtures.sign(TokenFixtures.claims(sub: "ann"), algorithm: "ES256")
        #expect(try await verifier.verify(token).get().claims["sub"] == .string("ann"))
        // No secret: an HS256 token is refused, the file's keys notwithstanding.
        #expect(TokenVerifierTests.reason(await verifier.verify(try await fixtures.sign(TokenFixtures.claims(sub: "ann")))) != nil)

        let missing = #expect(throws: ConfigurationError.self) {
            try EndpointSet.tokenVerifier(configuration: try configuration("gone.json"), environment: [:])
        }
        #expect(missing?.message.hasPrefix("identity.jwksFile: cannot read ") == true, "\(String(describing: missing))")
        #expect(missing?.message.contains("keys/gone.json") == true, "\(String(describing: missing))")
        let broken = #expect(throws: ConfigurationError.self) {
            try EndpointSet.tokenVerifier(configuration: try configuration("not-jwks.json"), environment: [:])
        }
        #expect(broken?.message.hasPrefix("identity.jwksFile: not a JWKS document") == true, "\(String(describing: broken))")
    }

    @Test(
        "mistakes in 'auth: token' name the key and the line",
        arguments: [
            ("auth:\n  token: opaque\n", 2, "'token' must be jwt (a verified bearer token), not 'opaque'"),
            ("auth:\n  token: jwt\n  keysFromEnvironment: K\n", 2, "'auth' takes either 'token' or 'keysFromEnvironment', not both"),
            ("auth:\n  keysFromEnvironment: K\n  anonymous: true\n", 3, "'anonymous' applies to 'token: jwt' only; API keys carry no identity"),
            ("auth:\n  token: jwt\n  anonymous: maybe\n", 3, "'anonymous' must be true or false, not 'maybe'"),
        ])
    func authErrors(yaml: String, line: Int, message: String) throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write("endpoints/x.yaml", yaml + "paths:\n  /x:\n    get:\n      sql: SELECT 1 AS one\n")
        let error = #expect(throws: ConfigurationError.self) {
            try EndpointSet.load(files: [file], sqlDirectory: directory.path, environment: ["K": "some-key"])
        }
        #expect(error?.line == line)
        #expect(error?.message == message)
    }
}
