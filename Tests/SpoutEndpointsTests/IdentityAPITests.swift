import Foundation
import JWTKit
import SpoutCore
import SpoutData
import SpoutEndpoints
import SpoutHTTP
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Verified tokens through real sockets on each database: the pets API's owners, claims as
/// parameters, and (PostgreSQL) roles and row-level security that never outlive a request.
@Suite("Identity")
struct IdentityAPITests {
    static let fixtures = Result { try TokenFixtures() }

    /// A service on `database` with `endpoints`, verifying tokens with the fixtures' keys under
    /// `identity`.
    static func withService(
        _ endpoints: EndpointSet, database: Database, identity: SpoutConfiguration.Identity = .init(),
        verifier: TokenVerifier? = nil, configuration: ServerConfiguration = InProcessServer.testConfiguration,
        _ body: (InProcessServer) async throws -> Void
    ) async throws {
        var endpoints = endpoints
        endpoints.identity = identity
        endpoints.tokenVerifier = try verifier ?? Self.fixtures.get().verifier(identity)
        try await InProcessServer.serving(endpoints, database: database, configuration: configuration, body)
    }

    static func send(
        _ service: InProcessServer, _ method: String, _ path: String, token: String?, apiKey: String? = nil,
        form: [(String, String)] = []
    ) async throws -> HTTPTestResponse {
        var headers: [(String, String)] = [("Content-Type", "application/x-www-form-urlencoded")]
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        if let apiKey { headers.append(("X-API-Key", apiKey)) }
        let body = form.map { "\(RawHTTP.formEncode($0.0))=\(RawHTTP.formEncode($0.1))" }.joined(separator: "&")
        return try await RawHTTP.get(port: service.port, path, method: method, headers: headers, body: Array(body.utf8))
    }

    static func token(_ sub: String, role: String? = nil, extra: [String: ClaimValue] = [:]) async throws -> String {
        try await Self.fixtures.get().sign(TokenFixtures.claims(sub: sub, role: role, extra: extra))
    }

    // MARK: Pets

    /// The shipped endpoints on a pet table that Spout reaches as an ordinary role.
    static func withPets(
        _ backend: SQLDialect, verifier: TokenVerifier? = nil, _ body: (InProcessServer, Database) async throws -> Void
    ) async throws {
        let store = try IdentityDatabase.make(backend) { connection in
            try PetsLoader(sqlDirectory: Repository.sqlDirectory).load(into: connection)
        }
        defer { store.drop() }
        let database = try store.open()
        defer { database.close() }
        try await Self.withService(try Repository.shippedEndpoints(), database: database, verifier: verifier) { service in
            try await body(service, database)
        }
    }

    @Test("pets: anyone reads; only a token's subject creates, changes and deletes its own", arguments: PetsAPITests.backends)
    func petsOwners(_ backend: SQLDialect) async throws {
        try await Self.withPets(backend) { service, database in
            let diane = try await Self.token("Diane")
            let gwen = try await Self.token("Gwen")
            #expect(try await service.get("/pets?owner=Gwen").status == 200)
            #expect(try await Self.send(service, "GET", "/pets/Bowser", token: nil).status == 200)

            // No token: 401 before any SQL.
            let before = try await PetsAPITests.table(database)
            let anonymous = try await Self.send(service, "POST", "/pets", token: nil, form: [("name", "Rex")])
            #expect(anonymous.status == 401)
            #expect(anonymous.header("www-authenticate") == #"Bearer realm="spout""#)
            #expect(anonymous.text == #"{"error":"missing token: send Authorization: Bearer <JWT>"}"#)
            #expect(try await Self.send(service, "DELETE", "/pets/Bowser", token: nil).status == 401)

            // The subject owns what it creates, whatever owner says.
            let created = try await Self.send(service, "POST", "/pets", token: diane, form: [("name", "Rex"), ("owner", "Zed"), ("species", "dog")])
            #expect(created.status == 201)
            #expect(created.text == #"{"name":"Rex","owner":"Diane","species":"dog","sex":null,"birth":null,"death":null}"#)
            #expect(created.header("cache-control") == "private")
            #expect(created.header("vary")?.contains("Authorization") == true)

            // Another subject can neither change nor delete it: 404, nothing changed.
            let afterCreate = try await PetsAPITests.table(database)
            #expect(try await Self.send(service, "POST", "/pets/Rex", token: gwen, form: [("species", "cat")]).status == 404)
            #expect(try await Self.send(service, "DELETE", "/pets/Rex", token: gwen).status == 404)
            #expect(try await Self.send(service, "DELETE", "/pets/Bowser", token: gwen).status == 404)
            #expect(try await PetsAPITests.table(database) == afterCreate)

            // The owner changes it, gives it away; the new owner deletes it.
            let changed = try await Self.send(service, "POST", "/pets/Rex", token: diane, form: [("sex", "m")])
            #expect(changed.status == 200)
            #expect(changed.text == #"{"name":"Rex","owner":"Diane","species":"dog","sex":"m","birth":null,"death":null}"#)
            #expect(try await Self.send(service, "POST", "/pets/Rex", token: diane, form: [("owner", "Gwen")]).status == 200)
            #expect(try await Self.send(service, "DELETE", "/pets/Rex", token: diane).status == 404)
            #expect(try await Self.send(service, "DELETE", "/pets/Rex", token: gwen).status == 204)
            #expect(try await PetsAPITests.table(database) == before)
        }
    }

    @Test("forged, expired, not-yet-valid, wrong-aud, alg none, HS/RS-confused and truncated tokens are 401 invalid_token, say why without the token, and run no SQL", arguments: PetsAPITests.backends)
    func badTokens(_ backend: SQLDialect) async throws {
        let fixtures = try Self.fixtures.get()
        let now = Int64(Date().timeIntervalSince1970)
        let good = try await Self.token("Diane")
        let parts = good.split(separator: ".").map(String.init)
        // HS256 signed with the RSA public key, which an attacker knows (HS/RS confusion).
        let confusedKeys = JWTKeyCollection()
        await confusedKeys.add(hmac: HMACKey(from: fixtures.rsaBacking.publicKey.pemRepresentation), digestAlgorithm: .sha256)
        let confused = try await confusedKeys.sign(TokenClaims(TokenFixtures.claims(sub: "Diane")), kid: JWKIdentifier(string: "rs"))
        let bad: [(String, String)] = [
            (TokenFixtures.raw(header: #"{"alg":"none"}"#, payload: #"{"sub":"Diane"}"#, signature: ""), "unsigned tokens (alg none) are not accepted"),
            (parts[0] + "." + Data(#"{"sub":"Gwen","aud":"spout-tests"}"#.utf8).base64URL + "." + parts[2], "bad signature"),
            (try await fixtures.sign(["sub": "Diane", "aud": "spout-tests", "exp": .integer(now - 3600)]), "expired token"),
            (try await fixtures.sign(["sub": "Diane", "aud": "spout-tests", "nbf": .integer(now + 3600)]), "token not valid yet (nbf)"),
            (try await fixtures.sign(["sub": "Diane", "aud": "another-service"], algorithm: "ES256"), "wrong audience (aud)"),
            (confused, "bad signature"),
            (parts[0] + "." + parts[1], "malformed token: a JWT is three base64url parts separated by dots"),
        ]
        var identity = SpoutConfiguration.Identity()
        identity.audience = "spout-tests"
        try await Self.withPets(backend, verifier: try fixtures.verifier(identity)) { service, database in
            for (token, reason) in bad {
                let statements = database.statistics.statementCount
                let response = try await Self.send(service, "DELETE", "/pets/Bowser", token: token)
                #expect(response.status == 401)
                #expect(response.header("www-authenticate") == #"Bearer realm="spout", error="invalid_token""#)
                #expect(response.text == #"{"error":"invalid token: \#(reason)"}"#)
                #expect(!response.text.contains(token))
                #expect(database.statistics.statementCount == statements)
            }
            #expect(try await service.get("/pets/Bowser").status == 200)
        }
    }

    // MARK: API keys as identities

    @Test("an API key stands for its subject: it writes as that owner, by X-API-Key or as a bearer; an unknown key is 401", arguments: PetsAPITests.backends)
    func apiKeyIdentities(_ backend: SQLDialect) async throws {
        var configuration = SpoutConfiguration()
        configuration.identity.apiKeys = [
            .init(subject: "Gwen", keyFromEnvironment: "TEST_KEY_GWEN"), .init(subject: "Benny", keyFromEnvironment: "TEST_KEY_BENNY"),
        ]
        let (gwen, benny) = ("gwen-key-0123456789", "benny-key-9876543210")
        let verifier = try EndpointSet.tokenVerifier(
            configuration: configuration,
            environment: ["TEST_KEY_GWEN": gwen, "TEST_KEY_BENNY": benny, "SPOUT_JWT_SECRET": TokenFixtures.secret])
        try await Self.withPets(backend, verifier: verifier) { service, database in
            let before = try await PetsAPITests.table(database)
            let created = try await Self.send(service, "POST", "/pets", token: nil, apiKey: gwen, form: [("name", "Keyed"), ("species", "cat")])
            #expect(created.status == 201, "\(created.text)")
            #expect(created.text == #"{"name":"Keyed","owner":"Gwen","species":"cat","sex":null,"birth":null,"death":null}"#)
            #expect(created.header("vary") == "Accept, Accept-Encoding, Authorization, X-API-Key")

            // Benny's key is Benny: Gwen's pet is not his to change or delete.
            #expect(try await Self.send(service, "POST", "/pets/Keyed", token: benny, form: [("sex", "f")]).status == 404)
            #expect(try await Self.send(service, "DELETE", "/pets/Keyed", token: nil, apiKey: benny).status == 404)

            // A key that is no one's, as a bearer or X-API-Key: 401 before any SQL.
            for (token, apiKey) in [("not-a-key", nil), (nil, "gwen-key-012345678"), (nil, gwen + " ")] as [(String?, String?)] {
                let statements = database.statistics.statementCount
                let refused = try await Self.send(service, "DELETE", "/pets/Keyed", token: token, apiKey: apiKey)
                if apiKey == gwen + " " {
                    // Blanks around a header value are not part of it: that is Gwen's key.
                    #expect(refused.status == 204)
                    continue
                }
                #expect(refused.status == 401)
                #expect(refused.text == #"{"error":"invalid credentials: neither a token nor a known API key"}"#)
                #expect(refused.header("www-authenticate") == #"Bearer realm="spout", error="invalid_token""#)
                #expect(database.statistics.statementCount == statements)
            }
            // Tokens keep working beside the keys.
            #expect(try await Self.send(service, "DELETE", "/pets/Keyed", token: try await Self.token("Gwen")).status == 404)
            #expect(try await PetsAPITests.table(database) == before)
        }
    }

    @Test("identity.apiKeys: parsed from the file and the variable; unusable entries stop the start without quoting a key")
    func apiKeySettings() throws {
        let file = try SpoutConfiguration.parse(
            """
            identity:
              apiKeys:
                - {subject: reports, role: reporter, keyFromEnvironment: KEY_REPORTS}
                - subject: gwen
                  keyFromEnvironment: KEY_GWEN
            """, file: "spout.yaml")
        #expect(file.identity.apiKeys == [
            .init(subject: "reports", role: "reporter", keyFromEnvironment: "KEY_REPORTS"), .init(subject: "gwen", keyFromEnvironment: "KEY_GWEN"),
        ])
        var variable = SpoutConfiguration()
        try variable.applyEnvironment(["SPOUT_IDENTITY_API_KEYS": "reports:reporter:KEY_REPORTS, gwen::KEY_GWEN"])
        #expect(variable.identity.apiKeys == file.identity.apiKeys)
        #expect(throws: ConfigurationError.self) { try variable.applyEnvironment(["SPOUT_IDENTITY_API_KEYS": "reports:KEY_REPORTS"]) }
        #expect(throws: ConfigurationError.self) {
            _ = try SpoutConfiguration.parse("identity:\n  apiKeys:\n    - {subject: x, role: 'no role', keyFromEnvironment: K}\n", file: "spout.yaml")
        }

        let secret = "s3cr3t-key-value"
        let cases: [([String: String], String)] = [
            ([:], "KEY_REPORTS, the API key of subject 'reports' (identity.apiKeys), is not set"),
            (["KEY_REPORTS": " "], "KEY_REPORTS, the API key of subject 'reports' (identity.apiKeys), is empty"),
            (["KEY_REPORTS": "a.b.c"], "holds a value shaped like a JWT"),
            (["KEY_REPORTS": secret, "KEY_GWEN": secret], "KEY_GWEN, the API key of subject 'gwen' (identity.apiKeys), holds the key of another"),
        ]
        for (environment, message) in cases {
            #expect {
                _ = try EndpointSet.tokenVerifier(configuration: file, environment: environment)
            } throws: { error in
                let text = String(describing: error)
                return text.contains(message) && !text.contains(secret)
            }
        }
        let verifier = try #require(try EndpointSet.tokenVerifier(configuration: file, environment: ["KEY_REPORTS": "r-key", "KEY_GWEN": "g-key"]))
        #expect(verifier.apiKeys.identity(of: "r-key")?.claims == ["sub": "reports", "role": "reporter"])
        #expect(verifier.apiKeys.identity(of: "g-key")?.claims == ["sub": "gwen"])
        #expect(verifier.apiKeys.identity(of: "r-ke") == nil)
        #expect(!String(describing: verifier.apiKeys).contains("r-key") && !String(reflecting: verifier.apiKeys).contains("r-key"))
    }

    // MARK: Claims as parameters

    /// An endpoint file whose SQL reads claims; anonymous callers allowed.
    static let claimsFile = """
        auth:
          token: jwt
          anonymous: true
        paths:
          /whoami:
            get:
              sql: SELECT CAST(:claims.sub AS text) AS sub, CAST(:claims.address.city AS text) AS city, CAST(:claims.missing AS text) AS missing
              result: object
        """

    static func endpoints(_ files: [String: String]) throws -> (EndpointSet, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-identity-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var paths: [String] = []
        for (name, text) in files.sorted(by: { $0.key < $1.key }) {
            let path = directory.appendingPathComponent(name).path
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            paths.append(path)
        }
        return (try EndpointSet.load(files: paths, sqlDirectory: directory.path, environment: [:]), directory)
    }

    /// A service with the endpoint files `files` (by name, SQL inline) on an empty database of
    /// `backend` that Spout reaches as an ordinary role, verifying the fixtures' tokens.
    static func withEndpoints(
        _ backend: SQLDialect, _ files: [String: String], _ body: (InProcessServer, Database) async throws -> Void
    ) async throws {
        let store = try IdentityDatabase.make(backend) { _ in }
        defer { store.drop() }
        let database = try store.open()
        defer { database.close() }
        let (endpoints, directory) = try Self.endpoints(files)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Self.withService(endpoints, database: database) { service in try await body(service, database) }
    }

    @Test("claims reach SQL as values: quotes, ;, -- and Unicode; nested by path; missing is NULL", arguments: PetsAPITests.backends)
    func claimsAsValues(_ backend: SQLDialect) async throws {
        try await Self.withEndpoints(backend, ["claims.yaml": Self.claimsFile]) { service, _ in
            let hostile = "O'Brien\"; DROP TABLE pet; -- 名前 ü"
            let token = try await Self.token(hostile, extra: ["address": .object(["city": "Zürich'--"])])
            let answer = try await Self.send(service, "GET", "/whoami", token: token)
            #expect(answer.status == 200)
            let object = try #require(try answer.json() as? [String: Any])
            #expect(object["sub"] as? String == hostile)
            #expect(object["city"] as? String == "Zürich'--")
            #expect(object["missing"] is NSNull)
            #expect(answer.header("cache-control") == "private")
            let anonymous = try await Self.send(service, "GET", "/whoami", token: nil)
            #expect(anonymous.text == #"{"sub":null,"city":null,"missing":null}"#)
        }
    }

    // MARK: Endpoint roles and tags

    /// An endpoint for editors and admins only, answering who asked.
    static let editorsFile = """
        auth:
          token: jwt
          roles: [editor, admin]
        paths:
          /notes:
            get:
              sql: SELECT CAST(:claims.sub AS text) AS sub, CAST(:claims.role AS text) AS role
              result: object
        """

    @Test("an endpoint's roles: 403 insufficient_scope naming them before any SQL; one caller's ETag never confirms another's body",
          arguments: PetsAPITests.backends)
    func rolesAndPrivateTags(_ backend: SQLDialect) async throws {
        try await Self.withEndpoints(backend, ["editors.yaml": Self.editorsFile]) { service, database in
            let refusals: [(String?, Int, String, String?)] = [
                (try await Self.token("Diane", role: "viewer"), 403,
                 #"{"error":"insufficient role: needs one of editor, admin; the token's role is 'viewer'"}"#,
                 #"Bearer realm="spout", error="insufficient_scope""#),
                (try await Self.token("Diane"), 403,
                 #"{"error":"insufficient role: needs one of editor, admin; the token's role is missing"}"#,
                 #"Bearer realm="spout", error="insufficient_scope""#),
                (nil, 401, #"{"error":"missing token: send Authorization: Bearer <JWT>"}"#, #"Bearer realm="spout""#),
            ]
            for (token, status, body, challenge) in refusals {
                let statements = database.statistics.statementCount
                let refused = try await Self.send(service, "GET", "/notes", token: token)
                #expect(refused.status == status)
                #expect(refused.text == body)
                #expect(refused.header("www-authenticate") == challenge)
                #expect(database.statistics.statementCount == statements, "refused before any SQL")
            }

            // Two editors: each body is tagged by its own digest, kept private per caller.
            let diane = try await Self.token("Diane", role: "editor")
            let gwen = try await Self.token("Gwen", role: "admin")
            let dianes = try await Self.send(service, "GET", "/notes", token: diane)
            #expect(dianes.status == 200)
            #expect(dianes.text == #"{"sub":"Diane","role":"editor"}"#)
            #expect(dianes.header("cache-control") == "private")
            #expect(dianes.header("vary")?.contains("Authorization") == true)
            let tag = try #require(dianes.header("etag"))
            func conditional(_ token: String) async throws -> HTTPTestResponse {
                try await RawHTTP.get(port: service.port, "/notes", headers: [("Authorization", "Bearer \(token)"), ("If-None-Match", tag)])
            }
            // Diane's tag with Gwen's token: Gwen's own body, never a 304 for Diane's.
            let gwens = try await conditional(gwen)
            #expect(gwens.status == 200)
            #expect(gwens.text == #"{"sub":"Gwen","role":"admin"}"#)
            #expect(gwens.header("etag") != tag)
            // The same tag with Diane's token confirms Diane's body.
            let confirmed = try await conditional(diane)
            #expect(confirmed.status == 304 && confirmed.body.isEmpty)

            // `?api` says what the operation needs, and is open to all.
            let documentation = try await service.get("/notes?api")
            #expect(documentation.text.contains(
                "<p>Requires a verified token: <code>Authorization: Bearer &lt;JWT&gt;</code>, with the role <code>editor</code> or <code>admin</code>.</p>"))
        }
    }

    @Test("requiredClaims: a token without one (absent or null, by path) is 403 naming it before any SQL; with them the claims reach SQL",
          arguments: PetsAPITests.backends)
    func requiredClaims(_ backend: SQLDialect) async throws {
        let file = """
            auth:
              token: jwt
              requiredClaims: [email, address.city]
            paths:
              /contact:
                get:
                  sql: SELECT CAST(:claims.email AS text) AS email, CAST(:claims.address.city AS text) AS city
                  result: object
            """
        try await Self.withEndpoints(backend, ["contact.yaml": file]) { service, database in
            let complete = try await Self.token("Diane", extra: ["email": "d@example.com", "address": .object(["city": "Oslo"])])
            let answered = try await Self.send(service, "GET", "/contact", token: complete)
            #expect(answered.status == 200)
            #expect(answered.text == #"{"email":"d@example.com","city":"Oslo"}"#)
            let refusals: [(String?, Int, String)] = [
                (try await Self.token("Diane", extra: ["address": .object(["city": "Oslo"])]), 403,
                 #"{"error":"missing claim: this endpoint needs the token's 'email' (auth.requiredClaims)"}"#),
                (try await Self.token("Diane", extra: ["email": .null, "address": .object(["city": "Oslo"])]), 403,
                 #"{"error":"missing claim: this endpoint needs the token's 'email' (auth.requiredClaims)"}"#),
                (try await Self.token("Diane", extra: ["email": "d@example.com", "address": "Oslo"]), 403,
                 #"{"error":"missing claim: this endpoint needs the token's 'address.city' (auth.requiredClaims)"}"#),
                (nil, 401, #"{"error":"missing token: send Authorization: Bearer <JWT>"}"#),
            ]
            for (token, status, body) in refusals {
                let statements = database.statistics.statementCount
                let refused = try await Self.send(service, "GET", "/contact", token: token)
                #expect(refused.status == status)
                #expect(refused.text == body)
                #expect(database.statistics.statementCount == statements, "refused before any SQL")
            }
            let documentation = try await service.get("/contact?api")
            #expect(documentation.text.contains(
                "<p>Requires a verified token: <code>Authorization: Bearer &lt;JWT&gt;</code>, carrying the claims <code>email</code>, <code>address.city</code>.</p>"))
        }
        // Anonymous requests have no claims to require.
        #expect {
            _ = try Self.endpoints(["both.yaml": "auth:\n  token: jwt\n  anonymous: true\n  requiredClaims: [sub]\npaths:\n  /x:\n    get:\n      sql: SELECT 1 AS one\n"])
        } throws: { error in
            String(describing: error).contains("'anonymous: true' and 'requiredClaims' exclude each other")
        }
    }

    @Test("pets: a change by someone without a token is 401 before any SQL, as creating and deleting are", arguments: PetsAPITests.backends)
    func anonymousChangeOfAPet(_ backend: SQLDialect) async throws {
        try await Self.withPets(backend) { service, database in
            let before = try await PetsAPITests.table(database)
            let statements = database.statistics.statementCount
            let refused = try await Self.send(service, "POST", "/pets/Bowser", token: nil, form: [("owner", "Mallory")])
            #expect(refused.status == 401)
            #expect(refused.header("www-authenticate") == #"Bearer realm="spout""#)
            #expect(database.statistics.statementCount == statements)
            #expect(try await PetsAPITests.table(database) == before)
            // Reads need no token, and a token changes nothing about them.
            let open = try await Self.send(service, "GET", "/pets/Bowser", token: nil)
            let withToken = try await Self.send(service, "GET", "/pets/Bowser", token: try await Self.token("Gwen"))
            #expect(open.status == 200 && withToken.status == 200 && open.text == withToken.text)
        }
    }

    @Test("an SQL file that uses claims on an endpoint without token auth does not load")
    func claimsNeedTokenAuth() throws {
        let file = """
            paths:
              /whoami:
                get:
                  sql: SELECT :claims.sub AS sub
                  result: object
            """
        #expect {
            _ = try Self.endpoints(["open.yaml": file])
        } throws: { error in
            String(describing: error).contains("parameter :claims.sub is a token claim, but GET /whoami takes no token")
        }
    }

    // MARK: PostgreSQL roles

    static let rolesFile = """
        auth:
          token: jwt
          anonymous: true
        paths:
          /whoami:
            get:
              sql: SELECT CAST(current_user AS text) AS role, current_setting('request.jwt.claims', true) AS claims, CAST(:claims.sub AS text) AS sub
              result: object
          /whoami/rows:
            get:
              sql: SELECT n, CAST(current_user AS text) AS role, CAST(:claims.sub AS text) AS sub FROM generate_series(1, 3) AS n ORDER BY n
              page:
                key: [n]
        """

    static let publicFile = """
        paths:
          /session:
            get:
              sql: SELECT CAST(current_user AS text) AS role, coalesce(current_setting('request.jwt.claims', true), '') AS claims
              result: object
        """

    /// A service on a PostgreSQL database with `configuration`, reached as an ordinary role that
    /// may switch to its reader (the default) and writer roles, anonymous callers as its
    /// anonymous role, serving ``rolesFile``, ``publicFile`` and `files`.
    static func withRoles(
        _ configuration: DatabaseConfiguration, files: [String: String] = [:],
        _ body: (InProcessServer, Database, IdentityDatabase) async throws -> Void
    ) async throws {
        let store = try IdentityDatabase.make(.postgres) { _ in }
        defer { store.drop() }
        let database = try store.open(configuration)
        defer { database.close() }
        var identity = SpoutConfiguration.Identity()
        identity.roles = [store.reader, store.writer]
        identity.defaultRole = store.reader
        identity.anonymousRole = store.anonymous
        let all = files.merging(["roles.yaml": Self.rolesFile, "public.yaml": Self.publicFile]) { own, _ in own }
        let (endpoints, directory) = try Self.endpoints(all)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Self.withService(endpoints, database: database, identity: identity) { service in
            try await body(service, database, store)
        }
    }

    @Test("PostgreSQL: SET LOCAL ROLE from the token (allow-list, else 403), anonymous role, claims setting; nothing leaks on a pool of one",
          .enabled(if: TestDatabases.postgresEnabled))
    func postgresRoles() async throws {
        var configuration = DatabaseConfiguration()
        configuration.maximumConnections = 1
        try await Self.withRoles(configuration) { service, database, store in
            // Not in the allow-list: 403, before any SQL.
            let superuser = try await Self.send(service, "GET", "/whoami", token: try await Self.token("eve", role: "spout"))
            #expect(superuser.status == 403)
            #expect(superuser.text == #"{"error":"role 'spout' is not allowed (identity.roles)"}"#)

            // A streamed result (a cursor in the request's transaction) and a page run as the
            // token's role too.
            let writer = try await Self.token("wanda", role: store.writer)
            let row = #"{"role":"\#(store.writer)","sub":"wanda"}"#
            let streamed = try await Self.send(service, "GET", "/whoami/rows", token: writer)
            #expect(streamed.text == "[" + (1...3).map { #"{"n":\#($0),"# + row.dropFirst() }.joined(separator: ",") + "]")
            let page = try await Self.send(service, "GET", "/whoami/rows?pageSize=2", token: writer)
            #expect(page.text == "[" + (1...2).map { #"{"n":\#($0),"# + row.dropFirst() }.joined(separator: ",") + "]")
            #expect(page.header("link") != nil && page.header("cache-control") == "private")

            // An object with an identity runs event-driven (its settings in its pipeline), not
            // on a thread: one run for this request (the pool's one connection is open by now).
            let runs = database.statistics.eventDrivenRunCount
            let single = try await Self.send(service, "GET", "/whoami", token: writer)
            #expect(single.text.hasPrefix(#"{"role":"\#(store.writer)","#))
            #expect(database.statistics.eventDrivenRunCount == runs + 1)

            // Interleaved identities on the one connection: each sees only its own, whichever
            // path (event-driven objects, streams on a thread) ran before on it.
            let count = 1_000
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<count {
                    group.addTask {
                        switch index % 5 {
                        case 0, 1:
                            let role = index % 5 == 0 ? store.writer : nil
                            let answer = try await Self.send(service, "GET", "/whoami", token: try await Self.token("user\(index)", role: role))
                            let object = try #require(try answer.json() as? [String: Any])
                            #expect(object["role"] as? String == (role ?? store.reader))
                            #expect(object["sub"] as? String == "user\(index)")
                            let claims = try JSONSerialization.jsonObject(with: Data(((object["claims"] as? String) ?? "").utf8)) as? [String: Any]
                            #expect(claims?["sub"] as? String == "user\(index)")
                        case 2:
                            let answer = try await Self.send(service, "GET", "/whoami", token: nil)
                            #expect(answer.text == #"{"role":"\#(store.anonymous)","claims":"{}","sub":null}"#)
                        case 3:
                            let answer = try await Self.send(service, "GET", "/session", token: nil)
                            #expect(answer.text == #"{"role":"\#(store.appRole)","claims":""}"#)
                        default:
                            // A page: on a thread, in BEGIN ... COMMIT.
                            let answer = try await Self.send(service, "GET", "/whoami/rows?pageSize=2", token: try await Self.token("user\(index)"))
                            let own = #"{"role":"\#(store.reader)","sub":"user\#(index)"}"#
                            #expect(answer.text == "[" + (1...2).map { #"{"n":\#($0),"# + own.dropFirst() }.joined(separator: ",") + "]")
                        }
                    }
                    if index >= 8 { try await group.next() }
                }
                try await group.waitForAll()
            }
        }
    }
}
