import Foundation
import Logging
import SpoutCore
import SpoutEndpoints
import SpoutHTTP
import SpoutTestDatabases
import SpoutTestSupport
import Testing

/// API keys per endpoint file (`auth`): loading, 401/403/200 through real sockets on the pets
/// API over SQLite, the logs and the OpenAPI document.
@Suite("API keys", .serialized)
struct APIKeyTests {
    static let keys = ["pets-key-0123456789abcdef", "second-key-fedcba9876543210"]
    static let wrongKey = "wrong-key-0000000000000000"
    static let variable = "SPOUT_PETS_API_KEYS"
    static var environment: [String: String] { [Self.variable: Self.keys.joined(separator: ", ")] }

    /// The shipped pets endpoint file with API keys (`auth`, methods: `methods`, or every one)
    /// in place of its token section, over a copy of its SQL without the owner checks (API
    /// keys carry no subject): written into `directory`, whose `sql/` ``load(_:environment:)``
    /// reads.
    static func petsFile(in directory: TemporaryDirectory, methods: String? = nil) throws -> String {
        let shipped = try String(
            contentsOf: Repository.root.appendingPathComponent("config/endpoints/pets.yaml"), encoding: .utf8)
        let withoutToken = shipped.replacing(/\nauth:\n(  .*\n)+/, with: "\n")
        for name in ["pets", "pet", "create", "update", "delete", "events", "add-event", "owners", "owner-pets"] {
            let sql = try String(contentsOf: Repository.root.appendingPathComponent("sql/pets/\(name).sql"), encoding: .utf8)
            _ = try directory.write(
                "sql/pets/\(name).sql", sql.replacing(" AND owner = :claims.sub", with: "").replacing(":claims.sub", with: "NULL"))
        }
        var auth = "auth:\n  keysFromEnvironment: \(Self.variable)\n"
        if let methods { auth += "  methods: \(methods)\n" }
        return try directory.write("endpoints/pets.yaml", auth + withoutToken)
    }

    static func load(_ file: String, environment: [String: String] = Self.environment) throws -> EndpointSet {
        let sqlDirectory = ((file as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent + "/sql"
        return try EndpointSet.load(files: [file], sqlDirectory: sqlDirectory, environment: environment)
    }

    /// Runs `body` with the protected pets API on a fresh SQLite pet table, logging into `log`.
    static func withService(
        methods: String? = nil, cors: CORSPolicy = CORSPolicy(), log: LogStore = LogStore(),
        _ body: (Int) async throws -> Void
    ) async throws {
        let directory = try TemporaryDirectory()
        let endpoints = try Self.load(try Self.petsFile(in: directory, methods: methods))
        let temporary = TestDatabases.makeSQLiteDatabase()
        defer { temporary.drop() }
        try await onThread { try SampleData.loadPets(into: temporary) }
        let database = try temporary.open()
        defer { database.close() }
        let logger = Logger(label: "spout.test.keys", factory: { _ in RecordingLogHandler(store: log, logLevel: .trace) })
        let server = HTTPServer(
            router: endpoints.makeRouter(database: database, logger: logger),
            configuration: ServerConfiguration(host: "127.0.0.1", port: 0, eventLoopThreads: 1, cors: cors), logger: logger)
        try await server.start()
        do {
            try await body(server.boundPort!)
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    static func send(
        _ port: Int, _ method: String, _ path: String, _ headers: [(String, String)] = [], body: String = ""
    ) async throws -> HTTPTestResponse {
        var headers = headers
        if !body.isEmpty { headers.append(("Content-Type", "application/x-www-form-urlencoded")) }
        return try await RawHTTP.get(port: port, path, method: method, headers: headers, body: Array(body.utf8))
    }

    // MARK: Loading

    @Test("auth covers every method by default, or the methods listed; the file records it")
    func loading() throws {
        let directory = try TemporaryDirectory()
        let all = try Self.load(try Self.petsFile(in: directory))
        #expect(all.endpoints.allSatisfy { $0.requiresAPIKey })
        #expect(all.files.first?.auth == EndpointAuth(environmentVariable: Self.variable, methods: EndpointAuth.allMethods, keyCount: 2))

        let writes = try Self.load(try Self.petsFile(in: directory, methods: "[POST, put, Delete]"))
        for endpoint in writes.endpoints {
            #expect(endpoint.requiresAPIKey == (endpoint.method != .get), "\(endpoint.title)")
        }
        #expect(writes.files.first?.auth?.methods == [.delete, .post, .put])

        let shipped = try Repository.shippedEndpoints()
        #expect(shipped.endpoints.allSatisfy { !$0.requiresAPIKey })
        #expect(shipped.files.allSatisfy { $0.auth == nil || $0.auth?.token != nil })
    }

    @Test("an unset or empty variable stops loading, naming the file and the variable")
    func missingKeys() throws {
        let directory = try TemporaryDirectory()
        let file = try Self.petsFile(in: directory)
        let unset = #expect(throws: ConfigurationError.self) { try Self.load(file, environment: [:]) }
        #expect(unset?.file == file)
        #expect(unset?.line == 2)
        #expect(unset?.message.contains("environment variable \(Self.variable), which is not set") == true)
        #expect(unset?.description.hasPrefix("\(file):2:") == true)

        for value in ["", "  ", " , ,"] {
            let empty = #expect(throws: ConfigurationError.self) { try Self.load(file, environment: [Self.variable: value]) }
            #expect(empty?.message.contains("\(Self.variable), which is empty") == true, "'\(value)'")
        }

        // A key that cannot travel in a header: the message counts, it does not quote.
        let spaced = #expect(throws: ConfigurationError.self) {
            try Self.load(file, environment: [Self.variable: "good-key, bad key-with-space"])
        }
        #expect(spaced?.message.hasPrefix("key 2 of 2 in the environment variable \(Self.variable) holds a blank") == true)
        #expect(spaced?.description.contains("bad key") == false)
        #expect(spaced?.description.contains("good-key") == false)
    }

    @Test(
        "mistakes in 'auth' name the key and the line",
        arguments: [
            ("auth:\n  keysFromEnv: X\n", 2, "unknown key 'keysFromEnv' in 'auth' (known keys: keysFromEnvironment, token, methods, anonymous, roles, requiredClaims)"),
            ("auth:\n  methods: [POST]\n", 2, "'auth' needs 'keysFromEnvironment', the environment variable that holds the comma-separated API keys, or 'token: jwt' for verified bearer tokens"),
            ("auth:\n  keysFromEnvironment: SPOUT-KEYS\n", 2, "'keysFromEnvironment' must name an environment variable (letters, digits and underscores), not 'SPOUT-KEYS'"),
            ("auth:\n  keysFromEnvironment: K\n  methods: [POST, FETCH]\n", 3, "unknown method 'FETCH' in 'methods' (known: DELETE, GET, PATCH, POST, PUT)"),
            ("auth:\n  keysFromEnvironment: K\n  methods: [HEAD]\n", 3, "HEAD is served by the GET endpoint and needs a key when GET does; list GET instead"),
            ("auth:\n  keysFromEnvironment: K\n  methods: []\n", 3, "'methods' must list at least one method; remove 'auth' to leave the endpoints open"),
            ("auth: SPOUT_KEYS\n", 1, "'auth' must be a mapping (key: value lines)"),
            ("authentication:\n  keysFromEnvironment: K\n", 1, "unknown key 'authentication' in an endpoint file (known keys: description, auth, paths)"),
        ])
    func authErrors(yaml: String, line: Int, message: String) throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write("endpoints/x.yaml", yaml + "paths:\n  /x:\n    get:\n      sql: SELECT 1 AS one\n")
        let error = #expect(throws: ConfigurationError.self) {
            try Self.load(file, environment: ["K": "some-key"])
        }
        #expect(error?.file == file)
        #expect(error?.line == line)
        #expect(error?.message == message)
    }

    // MARK: Requests

    @Test("no credentials 401, wrong ones 403, a key 200, with either header; health, ready and OpenAPI stay open")
    func everyMethodProtected() async throws {
        try await Self.withService { port in
            let anonymous = try await Self.send(port, "GET", "/pets")
            #expect(anonymous.status == 401)
            #expect(anonymous.header("WWW-Authenticate") == #"Bearer realm="spout""#)
            #expect(anonymous.header("Content-Type") == "application/json")
            #expect(anonymous.text == #"{"error":"missing credentials: send Authorization: Bearer <key> or X-API-Key: <key>"}"#)

            let basic = try await Self.send(port, "GET", "/pets", [("Authorization", "Basic cGV0czprZXk=")])
            #expect(basic.status == 401)

            for headers in [[("Authorization", "Bearer \(Self.wrongKey)")], [("X-API-Key", Self.wrongKey)], [("X-API-Key", Self.keys[0] + "x")]] {
                let wrong = try await Self.send(port, "GET", "/pets", headers)
                #expect(wrong.status == 403, "\(headers)")
                #expect(wrong.header("WWW-Authenticate") == nil)
                #expect(wrong.text == #"{"error":"invalid credentials"}"#)
            }

            for headers in [
                [("Authorization", "Bearer \(Self.keys[0])")], [("Authorization", "bearer \(Self.keys[1])")],
                [("X-API-Key", Self.keys[0])], [("X-API-Key", Self.keys[1])],
            ] {
                let granted = try await Self.send(port, "GET", "/pets/Bowser", headers)
                #expect(granted.status == 200, "\(headers)")
                #expect(granted.text.hasPrefix(#"{"name":"Bowser""#))
            }
            let head = try await Self.send(port, "HEAD", "/pets")
            #expect(head.status == 401)

            // The key is checked before the arguments: no 400 telling what is missing.
            let invalidWrite = try await Self.send(port, "POST", "/pets", body: "species=cat")
            #expect(invalidWrite.status == 401)
            let deleted = try await Self.send(port, "DELETE", "/pets/Bowser", [("X-API-Key", Self.wrongKey)])
            #expect(deleted.status == 403)
            let stillThere = try await Self.send(port, "GET", "/pets/Bowser", [("X-API-Key", Self.keys[1])])
            #expect(stillThere.status == 200)

            for open in ["/health", "/ready", "/openapi.json", "/?api"] {
                let response = try await Self.send(port, "GET", open)
                #expect(response.status == 200, "\(open)")
            }
        }
    }

    @Test("with methods listed, the other methods stay open")
    func protectedMethodsOnly() async throws {
        try await Self.withService(methods: "[POST, PUT, PATCH, DELETE]") { port in
            let list = try await Self.send(port, "GET", "/pets?owner=Gwen")
            #expect(list.status == 200)
            let head = try await Self.send(port, "HEAD", "/pets/Bowser")
            #expect(head.status == 200)

            let anonymous = try await Self.send(port, "POST", "/pets", body: "name=Rex&owner=Ann&species=dog")
            #expect(anonymous.status == 401)
            let created = try await Self.send(
                port, "POST", "/pets", [("Authorization", "Bearer \(Self.keys[1])")], body: "name=Rex&owner=Ann&species=dog")
            #expect(created.status == 201)
            #expect(created.header("Location") == "/pets/Rex")

            let wrong = try await Self.send(port, "DELETE", "/pets/Rex", [("Authorization", "Bearer \(Self.wrongKey)")])
            #expect(wrong.status == 403)
            let deleted = try await Self.send(port, "DELETE", "/pets/Rex", [("X-API-Key", Self.keys[0])])
            #expect(deleted.status == 204)
            let gone = try await Self.send(port, "GET", "/pets/Rex")
            #expect(gone.status == 404)
        }
    }

    @Test("preflights need no key, and refusals carry CORS headers so the page can read them")
    func preflightsNeedNoKey() async throws {
        let origin = "https://pets.example.com"
        try await Self.withService(cors: CORSPolicy(allowedOrigins: [origin])) { port in
            let preflight = try await Self.send(
                port, "OPTIONS", "/pets/Bowser",
                [("Origin", origin), ("Access-Control-Request-Method", "DELETE"), ("Access-Control-Request-Headers", "authorization")])
            #expect(preflight.status == 204)
            #expect(preflight.header("Access-Control-Allow-Methods") == "DELETE, GET, HEAD, POST")
            #expect(preflight.header("Access-Control-Allow-Headers")?.contains("Authorization") == true)
            #expect(preflight.header("Access-Control-Allow-Headers")?.contains("X-API-Key") == true)

            let refused = try await Self.send(port, "DELETE", "/pets/Bowser", [("Origin", origin)])
            #expect(refused.status == 401)
            #expect(refused.header("Access-Control-Allow-Origin") == origin)
            let granted = try await Self.send(port, "GET", "/pets/Bowser", [("Origin", origin), ("X-API-Key", Self.keys[0])])
            #expect(granted.status == 200)
            #expect(granted.header("Access-Control-Allow-Origin") == origin)
        }
    }

    @Test("keys appear in no log entry; the startup line names the variable and the count")
    func keysAbsentFromLogs() async throws {
        let log = LogStore()
        try await Self.withService(log: log) { port in
            _ = try await Self.send(port, "GET", "/pets", [("Authorization", "Bearer \(Self.keys[0])")])
            _ = try await Self.send(port, "GET", "/pets?owner=Gwen", [("X-API-Key", Self.keys[1])])
            _ = try await Self.send(port, "GET", "/pets", [("X-API-Key", Self.wrongKey)])
            _ = try await Self.send(port, "POST", "/pets", [("Authorization", "Bearer \(Self.wrongKey)")], body: "name=\(Self.wrongKey)")
        }
        let entries = log.all
        let statuses = entries.compactMap { $0.metadata["http.status"] }
        #expect(statuses == ["200", "200", "403", "403"])
        for entry in entries {
            let text = entry.message + " " + entry.metadata.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            for secret in Self.keys + [Self.wrongKey] {
                #expect(!text.contains(secret), "\(text)")
            }
        }
        let startup = try #require(entries.first { $0.message == "API keys required" })
        #expect(startup.metadata["auth.variable"] == Self.variable)
        #expect(startup.metadata["auth.keys"] == "2")
        #expect(startup.metadata["endpoints.group"] == "pets")
    }

    // MARK: OpenAPI

    @Test("the OpenAPI document declares the schemes on protected operations, with 401 and 403")
    func openAPI() throws {
        let directory = try TemporaryDirectory()
        let endpoints = try Self.load(try Self.petsFile(in: directory, methods: "[POST, DELETE]"))
        let bytes = endpoints.openAPIDocument()
        #expect(!String(decoding: bytes, as: UTF8.self).contains(Self.keys[0]))
        let document = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        let components = try #require(document["components"] as? [String: Any])
        let schemes = try #require(components["securitySchemes"] as? [String: [String: String]])
        #expect(schemes["bearerAuth"]?["type"] == "http")
        #expect(schemes["bearerAuth"]?["scheme"] == "bearer")
        #expect(schemes["apiKeyAuth"]?["type"] == "apiKey")
        #expect(schemes["apiKeyAuth"]?["in"] == "header")
        #expect(schemes["apiKeyAuth"]?["name"] == "X-API-Key")
        let responses = try #require(components["responses"] as? [String: Any])
        #expect(responses["Unauthorized"] != nil && responses["Forbidden"] != nil)

        let paths = try #require(document["paths"] as? [String: [String: [String: Any]]])
        let post = try #require(paths["/pets"]?["post"])
        let security = try #require(post["security"] as? [[String: [String]]])
        #expect(security.map { Array($0.keys) } == [["bearerAuth"], ["apiKeyAuth"]])
        let postResponses = try #require(post["responses"] as? [String: Any])
        #expect(postResponses["401"] != nil && postResponses["403"] != nil)
        #expect(paths["/pets/{name}"]?["delete"]?["security"] != nil)

        let get = try #require(paths["/pets"]?["get"])
        #expect(get["security"] == nil)
        #expect((get["responses"] as? [String: Any])?["401"] == nil)

        let shipped = try #require(
            try JSONSerialization.jsonObject(with: Data(try Repository.shippedEndpoints().openAPIDocument())) as? [String: Any])
        // The shipped file takes tokens, not keys: only the token scheme is declared.
        let shippedSchemes = (shipped["components"] as? [String: Any])?["securitySchemes"] as? [String: Any]
        #expect(shippedSchemes.map { Set($0.keys) } == ["bearerJWT"])
    }

    @Test(
        "the document with security schemes is valid OpenAPI 3.1",
        .enabled(if: OpenAPITests.validatorAvailable, "python3 with openapi-spec-validator is not installed"))
    func openAPIValidates() throws {
        let directory = try TemporaryDirectory()
        let document = try Self.load(try Self.petsFile(in: directory)).openAPIDocument()
        let file = try directory.write("openapi.json", String(decoding: document, as: UTF8.self))
        let result = try ChildProcess.run(
            executable: "/usr/bin/env",
            arguments: ["python3", "-c", "import json,sys\nfrom openapi_spec_validator import validate\nvalidate(json.load(open(sys.argv[1])))", file])
        #expect(result.status == 0, "\(result.standardError)")
    }
}

