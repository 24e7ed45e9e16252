import Foundation
import Logging
import SpoutCore
import SpoutData
import SpoutDrivers
import SpoutEndpoints
import SpoutHTTP
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Writes an app can replay (issue #61), through real sockets on each database: a replay gets
/// the first answer byte for byte and applies nothing, another request under the key is 422,
/// concurrent requests with one key apply once, a key is its caller's alone, and it expires.
@Suite("Idempotency keys")
struct IdempotencyKeyTests {
    /// The shipped endpoints on a pets database Spout reaches as an ordinary role; the table of
    /// answers made by the tables' owner and granted, as docs/endpoints.md says.
    /// The pets database, with the table of idempotent answers made and granted to Spout's role.
    static func petsStore(_ backend: SQLDialect) async throws -> IdentityDatabase {
        let store = try IdentityDatabase.make(backend) { connection in
            try PetsLoader(sqlDirectory: Repository.sqlDirectory).load(into: connection)
            try (connection as? any IdempotencyStore)?.prepareIdempotency()
        }
        if backend == .postgres {
            try await onThread {
                let connection = try Drivers.driver(for: store.temporary.url).connect(readOnly: false, statistics: QueryStatistics())
                defer { connection.close() }
                try connection.executeScript("GRANT SELECT, INSERT, UPDATE, DELETE ON spout_idempotency TO \(store.appRole)")
            }
        }
        return store
    }

    static func withPets(
        _ backend: SQLDialect, retention: Duration = .seconds(3_600), configuration: ServerConfiguration = InProcessServer.testConfiguration,
        adjusting adjust: (inout EndpointSet) -> Void = { _ in }, _ body: (InProcessServer, Database) async throws -> Void
    ) async throws {
        let store = try await Self.petsStore(backend)
        defer { store.drop() }
        let database = try store.open()
        defer { database.close() }
        var endpoints = try Repository.shippedEndpoints()
        endpoints.idempotencyState = IdempotencyState(retention: retention)
        adjust(&endpoints)
        try await IdentityAPITests.withService(endpoints, database: database, configuration: configuration) { service in
            try await body(service, database)
        }
    }

    static func send(
        _ service: InProcessServer, _ method: String, _ path: String, token: String, key: String?, form: [(String, String)] = []
    ) async throws -> HTTPTestResponse {
        var headers: [(String, String)] = [("Content-Type", "application/x-www-form-urlencoded"), ("Authorization", "Bearer \(token)")]
        if let key { headers.append(("Idempotency-Key", key)) }
        let body = form.map { "\(RawHTTP.formEncode($0.0))=\(RawHTTP.formEncode($0.1))" }.joined(separator: "&")
        return try await RawHTTP.get(port: service.port, path, method: method, headers: headers, body: Array(body.utf8))
    }

    static func petCount(_ database: Database) async throws -> Int {
        try await PetsAPITests.table(database).components(separatedBy: "\"name\"").count - 1
    }

    @Test("a replay answers the first answer byte for byte, marked, and applies nothing; a key with another request is 422", arguments: PetsAPITests.backends)
    func replay(_ backend: SQLDialect) async throws {
        try await Self.withPets(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await Self.petCount(database)
            let first = try await Self.send(service, "POST", "/pets", token: diane, key: "\"create-rex-1\"", form: [("name", "Rex"), ("species", "dog")])
            #expect(first.status == 201, "\(first.text)")
            #expect(first.header("idempotent-replayed") == nil)
            let again = try await Self.send(service, "POST", "/pets", token: diane, key: "create-rex-1", form: [("name", "Rex"), ("species", "dog")])
            #expect(again.status == 201 && again.body == first.body, "\(again.status) \(again.text)")
            #expect(again.header("location") == first.header("location") && again.header("content-type") == first.header("content-type"))
            #expect(again.header("cache-control") == first.header("cache-control"))
            #expect(again.header("idempotent-replayed") == "true")
            #expect(try await Self.petCount(database) == before + 1)

            let other = try await Self.send(service, "POST", "/pets", token: diane, key: "create-rex-1", form: [("name", "Rex"), ("species", "cat")])
            #expect(other.status == 422 && other.text.contains("Idempotency-Key"), "\(other.status) \(other.text)")

            // A delete replayed after the pet is gone: the first answer, not a 404.
            #expect(try await Self.send(service, "DELETE", "/pets/Rex", token: diane, key: "delete-rex").status == 204)
            let replayedDelete = try await Self.send(service, "DELETE", "/pets/Rex", token: diane, key: "delete-rex")
            #expect(replayedDelete.status == 204 && replayedDelete.header("idempotent-replayed") == "true")
            #expect(try await Self.send(service, "DELETE", "/pets/Rex", token: diane, key: nil).status == 404)
            #expect(try await Self.petCount(database) == before)

            // A write that failed stored nothing: sent again, it runs again.
            let conflict = try await Self.send(service, "POST", "/pets", token: diane, key: "fluffy", form: [("name", "Fluffy")])
            #expect(conflict.status == 409)
            #expect(try await Self.send(service, "POST", "/pets", token: diane, key: "fluffy", form: [("name", "Fluffy")]).header("idempotent-replayed") == nil)
        }
    }

    @Test("a key is its caller's: another subject's request under it is a request of its own", arguments: PetsAPITests.backends)
    func perCaller(_ backend: SQLDialect) async throws {
        try await Self.withPets(backend) { service, _ in
            let diane = try await IdentityAPITests.token("Diane")
            let gwen = try await IdentityAPITests.token("Gwen")
            #expect(try await Self.send(service, "POST", "/pets", token: diane, key: "k1", form: [("name", "Rex")]).status == 201)
            let gwens = try await Self.send(service, "POST", "/pets", token: gwen, key: "k1", form: [("name", "Rex")])
            #expect(gwens.status == 409 && gwens.header("idempotent-replayed") == nil, "\(gwens.status) \(gwens.text)")
        }
    }

    @Test("20 concurrent requests with one key apply once, and all get the one answer", arguments: PetsAPITests.backends)
    func concurrent(_ backend: SQLDialect) async throws {
        try await Self.withPets(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await Self.petCount(database)
            let answers = try await withThrowingTaskGroup(of: HTTPTestResponse.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        try await Self.send(service, "POST", "/pets", token: diane, key: "burst", form: [("name", "Burst"), ("species", "cat")])
                    }
                }
                var answers: [HTTPTestResponse] = []
                for try await answer in group { answers.append(answer) }
                return answers
            }
            #expect(answers.allSatisfy { $0.status == 201 }, "\(answers.map(\.status))")
            #expect(Set(answers.map(\.text)).count == 1)
            #expect(answers.filter { $0.header("idempotent-replayed") == nil }.count == 1)
            #expect(try await Self.petCount(database) == before + 1)
        }
    }

    @Test("an answer older than the retention is forgotten: the key is new again", arguments: PetsAPITests.backends)
    func expiry(_ backend: SQLDialect) async throws {
        // Retention long enough for the replay below to come within it on a loaded machine.
        try await Self.withPets(backend, retention: .seconds(3)) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            #expect(try await Self.send(service, "DELETE", "/pets/Bowser", token: diane, key: "old").status == 204)
            let create = [("name", "Rex"), ("species", "dog")]
            #expect(try await Self.send(service, "POST", "/pets", token: diane, key: "create", form: create).status == 201)
            #expect(try await Self.send(service, "DELETE", "/pets/Rex", token: diane, key: nil).status == 204)
            let before = try await Self.petCount(database)
            try await Task.sleep(for: .milliseconds(6_100))
            #expect(try await Self.send(service, "DELETE", "/pets/Bowser", token: diane, key: "old").status == 404)
            // The expired record is in the way of the new answer: the write runs again, once.
            let again = try await Self.send(service, "POST", "/pets", token: diane, key: "create", form: create)
            #expect(again.status == 201 && again.header("idempotent-replayed") == nil, "\(again.status) \(again.text)")
            #expect(try await Self.petCount(database) == before + 1)
            let replay = try await Self.send(service, "POST", "/pets", token: diane, key: "create", form: create)
            #expect(replay.status == 201 && replay.header("idempotent-replayed") == "true" && replay.body == again.body)
            #expect(try await Self.petCount(database) == before + 1)
        }
    }

    @Test("pruning deletes answers older than the retention and keeps the others", arguments: PetsAPITests.backends)
    func pruning(_ backend: SQLDialect) async throws {
        try await Self.withPets(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            for key in ["a", "b", "c", "d"] {
                #expect(try await Self.send(service, "POST", "/pets", token: diane, key: key, form: [("name", "Pet-\(key)")]).status == 201)
            }
            // a and b are two hours old; so is d, written after c (as under a clock set back).
            let aging =
                backend == .sqlite
                ? "UPDATE spout_idempotency SET created_at = created_at - 7200 WHERE idempotency_key IN ('a', 'b', 'd')"
                : "UPDATE spout_idempotency SET created_at = created_at - interval '2 hours' WHERE idempotency_key IN ('a', 'b', 'd')"
            try await onThread { try database.withConnection(readOnly: false) { try $0.executeScript(aging) } }
            let state = IdempotencyState(retention: .seconds(3_600))
            try await state.ensure(on: database, logger: Logger(label: "test"))
            let pruned = try await state.pruneExpired(on: database)
            let kept = try await onThread {
                let sink = CollectingSink()
                try database.query("SELECT idempotency_key FROM spout_idempotency ORDER BY idempotency_key").write(as: .json(), to: sink)
                return sink.text
            }
            // SQLite deletes the rows before the first one within the retention (d waits for c).
            #expect(pruned == (backend == .sqlite ? 2 : 3))
            #expect(kept == (backend == .sqlite ? #"[{"idempotency_key":"c"},{"idempotency_key":"d"}]"# : #"[{"idempotency_key":"c"}]"#))
            #expect(try await state.pruneExpired(on: database) == 0)
            // Whether pruned or not, d's answer is past the retention: the request runs again.
            let d = try await Self.send(service, "POST", "/pets", token: diane, key: "d", form: [("name", "Pet-d")])
            #expect(d.status == 409 && d.header("idempotent-replayed") == nil, "\(d.status) \(d.text)")
            let c = try await Self.send(service, "POST", "/pets", token: diane, key: "c", form: [("name", "Pet-c")])
            #expect(c.status == 201 && c.header("idempotent-replayed") == "true")
        }
    }

    @Test("a malformed key is 400 before any SQL", arguments: ["", "has space", String(repeating: "k", count: 256), "caf\u{e9}"])
    func malformed(_ key: String) async throws {
        try await Self.withPets(.sqlite) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await PetsAPITests.table(database)
            let answer = try await Self.send(service, "POST", "/pets", token: diane, key: key, form: [("name", "Rex")])
            #expect(answer.status == 400 && answer.text.contains("Idempotency-Key"), "\(answer.status) \(answer.text)")
            #expect(try await PetsAPITests.table(database) == before)
        }
    }
}
