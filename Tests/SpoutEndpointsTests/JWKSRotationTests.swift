import Foundation
import JWTKit
import Logging
import SpoutEndpoints
import SpoutHTTP
import Synchronization
import Testing

/// When the keys of a JWKS URL are fetched (``JWKSRefreshPolicy``, no time passing).
@Suite("JWKS refresh policy")
struct JWKSRefreshPolicyTests {
    static let policy = JWKSRefreshPolicy(refreshInterval: .seconds(300), cooldown: .seconds(10))
    static let start = ContinuousClock.now

    static func at(_ seconds: Int) -> ContinuousClock.Instant { self.start + .seconds(seconds) }

    @Test("the first use fetches; a known key within the interval does not")
    func firstAndKnown() {
        #expect(Self.policy.needsFetch(now: Self.at(0), lastSuccess: nil, lastAttempt: nil, keyIsKnown: false))
        #expect(!Self.policy.needsFetch(now: Self.at(100), lastSuccess: Self.at(0), lastAttempt: Self.at(0), keyIsKnown: true))
    }

    @Test("keys as old as the interval are fetched again, known or not")
    func interval() {
        #expect(!Self.policy.needsFetch(now: Self.at(299), lastSuccess: Self.at(0), lastAttempt: Self.at(0), keyIsKnown: true))
        #expect(Self.policy.needsFetch(now: Self.at(300), lastSuccess: Self.at(0), lastAttempt: Self.at(0), keyIsKnown: true))
    }

    @Test("an unknown kid fetches at once, but not within the cooldown of the last attempt")
    func unknownKid() {
        #expect(Self.policy.needsFetch(now: Self.at(10), lastSuccess: Self.at(0), lastAttempt: Self.at(0), keyIsKnown: false))
        #expect(!Self.policy.needsFetch(now: Self.at(9), lastSuccess: Self.at(0), lastAttempt: Self.at(0), keyIsKnown: false))
    }

    @Test("a failed fetch is retried after the cooldown, not before; nor are stale keys")
    func failures() {
        #expect(!Self.policy.needsFetch(now: Self.at(5), lastSuccess: nil, lastAttempt: Self.at(0), keyIsKnown: false))
        #expect(Self.policy.needsFetch(now: Self.at(10), lastSuccess: nil, lastAttempt: Self.at(0), keyIsKnown: false))
        #expect(!Self.policy.needsFetch(now: Self.at(305), lastSuccess: Self.at(0), lastAttempt: Self.at(300), keyIsKnown: true))
    }
}

/// Keys from a JWKS URL served by a real HTTP server on loopback, fetched through the same
/// code `spout serve` uses (``EndpointSet/tokenVerifier(configuration:environment:)``).
@Suite("JWKS URL rotation")
struct JWKSRotationTests {
    /// An HTTP server serving `GET /jwks.json` from a document the test changes, counting the
    /// requests.
    final class KeyServer: Sendable {
        /// What the server answers, and how often it was asked.
        final class Published: Sendable {
            let document = Mutex("{\"keys\":[]}")
            let fetches = Atomic(0)
        }

        let published = Published()
        private let server: HTTPServer

        init() {
            var router = Router()
            let published = self.published
            router.add(.get, "/jwks.json") { _ in
                published.fetches.add(1, ordering: .relaxed)
                return Response.text(published.document.withLock { $0 }, contentType: "application/json")
            }
            self.server = HTTPServer(
                router: router, configuration: ServerConfiguration(host: "127.0.0.1", port: 0, eventLoopThreads: 1),
                logger: Logger(label: "spout.test.jwks", factory: { _ in SwiftLogNoOpLogHandler() }))
        }

        func start() async throws -> URL {
            try await self.server.start()
            return URL(string: "http://127.0.0.1:\(self.server.boundPort!)/jwks.json")!
        }

        func stop() async { await self.server.shutdown() }

        /// Serves a JWKS of `keys`.
        func serve(_ keys: [(kid: String, key: ES256PrivateKey)]) {
            let entries = keys.map { entry in
                let point = entry.key.parameters!
                return #"{"kty":"EC","crv":"P-256","x":"\#(point.x)","y":"\#(point.y)","kid":"\#(entry.kid)","alg":"ES256","use":"sig"}"#
            }
            self.published.document.withLock { $0 = "{\"keys\":[" + entries.joined(separator: ",") + "]}" }
        }

        var fetchCount: Int { self.published.fetches.load(ordering: .relaxed) }
    }

    static func sign(sub: String, kid: String, key: ES256PrivateKey) async throws -> String {
        let keys = await JWTKeyCollection().add(ecdsa: key, kid: JWKIdentifier(string: kid))
        return try await keys.sign(TokenClaims(TokenFixtures.claims(sub: sub)), kid: JWKIdentifier(string: kid))
    }

    static func verifier(url: URL, refreshSeconds: Int = 300, cooldownSeconds: Int = 0) throws -> TokenVerifier {
        var configuration = SpoutConfiguration()
        configuration.identity.jwksUrl = url.absoluteString
        configuration.identity.jwksRefreshSeconds = refreshSeconds
        configuration.identity.jwksCooldownSeconds = cooldownSeconds
        return try #require(try EndpointSet.tokenVerifier(configuration: configuration, environment: [:]))
    }

    static func reason(_ result: Result<TokenClaims, TokenVerifier.TokenRejection>) -> String? {
        if case .failure(let rejection) = result { return rejection.reason }
        return nil
    }

    @Test("a key added to the JWKS verifies on first use of its kid; a removed key stops verifying after the refresh")
    func rotation() async throws {
        let server = KeyServer()
        let url = try await server.start()
        defer { Task { await server.stop() } }
        let (old, new) = (ES256PrivateKey(), ES256PrivateKey())
        server.serve([("old", old)])
        let verifier = try Self.verifier(url: url, refreshSeconds: 1)

        let oldToken = try await Self.sign(sub: "ann", kid: "old", key: old)
        let newToken = try await Self.sign(sub: "bob", kid: "new", key: new)
        #expect(try await verifier.verify(oldToken).get().claims["sub"] == .string("ann"))
        #expect(server.fetchCount == 1)
        #expect(Self.reason(await verifier.verify(newToken)) == "unknown key id (kid) 'new'")

        // The provider adds the new key: its first token fetches the JWKS and verifies.
        server.serve([("old", old), ("new", new)])
        let fetchesBefore = server.fetchCount
        #expect(try await verifier.verify(newToken).get().claims["sub"] == .string("bob"))
        #expect(server.fetchCount == fetchesBefore + 1)

        // The provider withdraws the old key: once the keys are a second old, the refresh
        // drops it, remembered token or not.
        server.serve([("new", new)])
        let deadline = ContinuousClock.now + .seconds(20)
        var refused: String?
        while refused == nil && ContinuousClock.now < deadline {
            refused = Self.reason(await verifier.verify(oldToken))
            if refused == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(refused == "unknown key id (kid) 'old'")
        #expect(try await verifier.verify(newToken).get().claims["sub"] == .string("bob"))
    }

    @Test("made-up kids fetch at most once per cooldown; a broken document keeps the keys held")
    func cooldownAndBrokenDocuments() async throws {
        let server = KeyServer()
        let url = try await server.start()
        defer { Task { await server.stop() } }
        let key = ES256PrivateKey()
        server.serve([("k", key)])
        let verifier = try Self.verifier(url: url, refreshSeconds: 1, cooldownSeconds: 3_600)
        #expect(await verifier.publicKeys.refreshNow() == 1)
        let fetched = server.fetchCount
        for index in 0..<50 {
            let forged = try await Self.sign(sub: "mallory", kid: "made-up-\(index)", key: ES256PrivateKey())
            #expect(Self.reason(await verifier.verify(forged)) == "unknown key id (kid) 'made-up-\(index)'")
        }
        #expect(server.fetchCount == fetched, "an unknown kid fetched within the cooldown")

        // Not a JWKS, then a JWKS of nothing usable: the key held keeps verifying.
        let token = try await Self.sign(sub: "ann", kid: "k", key: key)
        for broken in ["<html>not json</html>", #"{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"sym"}]}"#] {
            server.published.document.withLock { $0 = broken }
            await verifier.publicKeys.refreshNow()
            #expect(verifier.jwksKeyCount == 1)
            #expect(try await verifier.verify(token).get().claims["sub"] == .string("ann"))
        }
    }

    @Test("a JWKS URL that cannot be reached refuses its tokens without failing the start")
    func unreachableAtStart() async throws {
        let server = KeyServer()
        let url = try await server.start()
        await server.stop()
        let verifier = try Self.verifier(url: url, cooldownSeconds: 0)
        #expect(await verifier.publicKeys.refreshNow() == 0)
        let key = ES256PrivateKey()
        let token = try await Self.sign(sub: "ann", kid: "k", key: key)
        #expect(Self.reason(await verifier.verify(token)) == "unknown key id (kid) 'k'")
    }

    @Test("identity.jwksUrl must be http(s)")
    func urlMustBeHTTP() {
        var configuration = SpoutConfiguration()
        configuration.identity.jwksUrl = "file:///etc/passwd"
        #expect {
            _ = try EndpointSet.tokenVerifier(configuration: configuration, environment: [:])
        } throws: { error in
            String(describing: error).contains("identity.jwksUrl: not an http:// or https:// URL")
        }
    }
}
