import Foundation
import JWTKit
import SpoutCore
import SpoutData
import SpoutDrivers
import SpoutEndpoints
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// What an outside attacker found where identity meets the database (issue #59), through real
/// sockets on each database: a forged token locks out no key, a superuser login does not open
/// other owners' pets, a row-level-security refusal is the caller's 403, and an identity
/// endpoint's errors are private to a cache.
@Suite("Identity hardening")
struct IdentityHardeningAPITests {
    static func send(
        _ service: InProcessServer, _ method: String, _ path: String, token: String?, form: [(String, String)] = []
    ) async throws -> HTTPTestResponse {
        try await IdentityAPITests.send(service, method, path, token: token, form: form)
    }

    @Test("one forged PS256 token naming a JWKS key without alg does not lock out that key's RS256 tokens", arguments: PetsAPITests.backends)
    func forgedTokenLocksNothing(_ backend: SQLDialect) async throws {
        let fixtures = try IdentityAPITests.fixtures.get()
        let verifier = try TokenVerifier(identity: .init(), secret: nil, jwks: try TokenHardeningTests.jwksWithoutAlgorithm(fixtures))
        try await IdentityAPITests.withPets(backend, verifier: verifier) { service, _ in
            let claims = TokenFixtures.claims(sub: "Diane")
            let good = try await TokenHardeningTests.signedByEntra(fixtures, algorithm: "RS256", claims: claims)
            let payload = good.split(separator: ".")[1]
            let forged = Data(#"{"alg":"PS256","kid":"entra"}"#.utf8).base64URL + "." + payload + "." + Data(repeating: 1, count: 256).base64URL
            let refused = try await Self.send(service, "POST", "/pets", token: forged, form: [("name", "Forged")])
            #expect(refused.status == 401 && refused.text == #"{"error":"invalid token: bad signature"}"#, "\(refused.text)")
            for name in ["Rex", "Max"] {
                let created = try await Self.send(service, "POST", "/pets", token: good, form: [("name", name)])
                #expect(created.status == 201, "\(created.text)")
            }
        }
    }

    @Test("a token without sub writes nothing: 403 naming the claim, on both databases", arguments: PetsAPITests.backends)
    func tokenWithoutSubject(_ backend: SQLDialect) async throws {
        try await IdentityAPITests.withPets(backend) { service, database in
            let before = try await PetsAPITests.table(database)
            let now = Int64(Date().timeIntervalSince1970)
            let nobody = try await IdentityAPITests.fixtures.get().sign(["iat": .integer(now), "exp": .integer(now + 3600)])
            let created = try await Self.send(service, "POST", "/pets", token: nobody, form: [("name", "Orphan")])
            #expect(created.status == 403, "\(created.text)")
            #expect(created.text.contains("'sub'"), "\(created.text)")
            #expect(try await PetsAPITests.table(database) == before)
        }
    }

    @Test("an identity endpoint's errors are private to caches and vary by credentials, as its answers are", arguments: PetsAPITests.backends)
    func privateErrors(_ backend: SQLDialect) async throws {
        try await IdentityAPITests.withPets(backend) { service, _ in
            let gwen = try await IdentityAPITests.token("Gwen")
            let answers = [
                try await Self.send(service, "DELETE", "/pets/Nobody", token: gwen),
                try await Self.send(service, "DELETE", "/pets/Bowser", token: nil),
                try await Self.send(service, "POST", "/pets/Bowser", token: gwen, form: [("sex", "x")]),
                try await Self.send(service, "POST", "/pets/Bowser", token: "a.b.c"),
            ]
            #expect(answers.map(\.status) == [404, 401, 400, 401])
            for answer in answers {
                #expect(answer.header("cache-control") == "private", "\(answer.status)")
                #expect(answer.header("vary")?.contains("Authorization") == true, "\(answer.status)")
            }
            // A public read's 404 stays cacheable.
            let missing = try await Self.send(service, "GET", "/pets/Nobody", token: nil)
            #expect(missing.status == 404 && missing.header("cache-control") == nil)
        }
    }

    @Test("the ?api page forbids scripts, frames and loads (Content-Security-Policy)", arguments: PetsAPITests.backends)
    func apiPagePolicy(_ backend: SQLDialect) async throws {
        try await IdentityAPITests.withPets(backend) { service, _ in
            let page = try await service.get("/pets?api")
            #expect(page.status == 200)
            #expect(page.header("content-security-policy")?.hasPrefix("default-src 'none'") == true)
            #expect(page.header("x-content-type-options") == "nosniff")
        }
    }

    @Test("logged in as a superuser, which row-level security does not bind, an owner's pet is still only theirs; start warns")
    func superuserLogin() async throws {
        guard TestDatabases.postgresEnabled else { return }
        let superuser = try TestDatabases.makePostgresDatabase(prefix: "spout_t_superuser")
        defer { superuser.drop() }
        try await onThread {
            let connection = try Drivers.driver(for: superuser.url).connect(readOnly: false, statistics: QueryStatistics())
            defer { connection.close() }
            try PetsLoader(sqlDirectory: Repository.sqlDirectory).load(into: connection)
        }
        let database = try Drivers.open(superuser.url)
        defer { database.close() }
        let endpoints = try Repository.shippedEndpoints()
        let warnings = await endpoints.rowSecurityBypassWarnings(on: database)
        #expect(warnings.count == 1 && warnings[0].hasPrefix("SECURITY: requests may run as the role"), "\(warnings)")
        try await IdentityAPITests.withService(endpoints, database: database) { service in
            let gwen = try await IdentityAPITests.token("Gwen")
            let before = try await PetsAPITests.table(database)
            // Bowser is Diane's.
            #expect(try await Self.send(service, "POST", "/pets/Bowser", token: gwen, form: [("owner", "Gwen")]).status == 404)
            #expect(try await Self.send(service, "DELETE", "/pets/Bowser", token: gwen).status == 404)
            #expect(try await PetsAPITests.table(database) == before)
        }
    }

    @Test("an ordinary login role gets no warning, and neither does SQLite", arguments: PetsAPITests.backends)
    func noWarningWhenPoliciesApply(_ backend: SQLDialect) async throws {
        try await IdentityAPITests.withPets(backend) { _, database in
            let endpoints = try Repository.shippedEndpoints()
            #expect(await endpoints.rowSecurityBypassWarnings(on: database).isEmpty)
        }
    }

    @Test("a row refused by row-level security (42501) is 403 permission denied, logged with the database's words, not a 500")
    func rowSecurityRefusal() async throws {
        guard TestDatabases.postgresEnabled else { return }
        let store = try IdentityDatabase.make(.postgres) { connection in
            try PetsLoader(sqlDirectory: Repository.sqlDirectory).load(into: connection)
        }
        defer { store.drop() }
        let endpoints = try store.endpoints("""
            auth:
              token: jwt
              methods: [POST]
            paths:
              /adoptions:
                post:
                  sql: INSERT INTO pet (name, owner) VALUES (:name, :owner)
                  result: none
                  parameters:
                    - name: name
                      type: string
                      required: true
                    - name: owner
                      type: string
                      required: true
            """)
        let database = try store.open()
        defer { database.close() }
        try await IdentityAPITests.withService(endpoints, database: database) { service in
            let diane = try await IdentityAPITests.token("Diane")
            let refused = try await Self.send(service, "POST", "/adoptions", token: diane, form: [("name", "Stray"), ("owner", "Gwen")])
            #expect(refused.status == 403 && refused.text == #"{"error":"permission denied"}"#, "\(refused.status) \(refused.text)")
            #expect(try await Self.send(service, "POST", "/adoptions", token: diane, form: [("name", "Stray"), ("owner", "Diane")]).status == 204)
        }
    }
}

extension IdentityHardeningAPITests {
    @Test("through a socket, every forgery is 401 without the token in the answer and writes nothing; valid tokens of every algorithm still write", arguments: PetsAPITests.backends)
    func hostileTokens(_ backend: SQLDialect) async throws {
        let fixtures = try IdentityAPITests.fixtures.get()
        try await IdentityAPITests.withPets(backend) { service, database in
            let before = try await PetsAPITests.table(database)
            let good = try await IdentityAPITests.token("Diane")
            for (label, token) in try await HostileTokens.forgeries(from: good, fixtures: fixtures) where !token.contains("\u{0}") {
                let answer = try await Self.send(service, "POST", "/pets", token: token, form: [("name", "Forged")])
                #expect([400, 401, 431].contains(answer.status), "\(label): \(answer.status) \(answer.text)")
                #expect(!answer.text.contains(token.prefix(40)), "\(label) echoed the token")
            }
            #expect(try await PetsAPITests.table(database) == before)
            for (index, algorithm) in TokenVerifier.supportedAlgorithms.enumerated() {
                let token = try await fixtures.sign(TokenFixtures.claims(sub: "Diane"), algorithm: algorithm)
                let created = try await Self.send(service, "POST", "/pets", token: token, form: [("name", "Pet\(index)")])
                #expect(created.status == 201, "\(algorithm): \(created.text)")
            }
        }
    }
}
