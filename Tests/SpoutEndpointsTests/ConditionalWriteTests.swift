import Foundation
import SpoutCore
import SpoutData
import SpoutEndpoints
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Conditional writes (issue #61), through real sockets on each database, on the shipped pets
/// API as an ordinary role (row-level security on PostgreSQL): `If-Match` with a stale tag is
/// 412 with the current row and changes nothing, a fresh one applies, `If-None-Match: *`
/// refuses to create over a row, and concurrent writes under one tag apply once.
@Suite("Conditional writes")
struct ConditionalWriteTests {
    static func send(
        _ service: InProcessServer, _ method: String, _ path: String, token: String, headers extra: [(String, String)] = [],
        form: [(String, String)] = []
    ) async throws -> HTTPTestResponse {
        var headers: [(String, String)] = [("Content-Type", "application/x-www-form-urlencoded"), ("Authorization", "Bearer \(token)")]
        headers += extra
        let body = form.map { "\(RawHTTP.formEncode($0.0))=\(RawHTTP.formEncode($0.1))" }.joined(separator: "&")
        return try await RawHTTP.get(port: service.port, path, method: method, headers: headers, body: Array(body.utf8))
    }

    @Test("a stale If-Match is 412 with the current row and its ETag, and changes nothing; a fresh one applies", arguments: PetsAPITests.backends)
    func ifMatch(_ backend: SQLDialect) async throws {
        try await IdempotencyKeyTests.withPets(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let read = try await service.get("/pets/Bowser")
            let tag = try #require(read.header("etag"))

            let changed = try await Self.send(service, "POST", "/pets/Bowser", token: diane, headers: [("If-Match", tag)], form: [("species", "wolf")])
            #expect(changed.status == 200 && changed.text.contains(#""species":"wolf""#), "\(changed.status) \(changed.text)")
            let reread = try await service.get("/pets/Bowser")
            #expect(reread.header("etag") != tag)
            // The answer carries the tag of what it made: the next write can name it.
            #expect(changed.header("etag") == reread.header("etag"))

            let before = try await PetsAPITests.table(database)
            let stale = try await Self.send(service, "POST", "/pets/Bowser", token: diane, headers: [("If-Match", tag)], form: [("species", "cat")])
            #expect(stale.status == 412, "\(stale.status) \(stale.text)")
            #expect(stale.body == reread.body && stale.header("etag") == reread.header("etag"), "\(stale.text)")
            #expect(stale.header("content-type") == "application/json")
            #expect(try await PetsAPITests.table(database) == before)

            // A list naming the current tag holds; a weak tag never does (strong comparison).
            let current = try #require(reread.header("etag"))
            let weak = try await Self.send(service, "POST", "/pets/Bowser", token: diane, headers: [("If-Match", "W/" + current)], form: [("sex", "f")])
            #expect(weak.status == 412)
            let listed = try await Self.send(
                service, "POST", "/pets/Bowser", token: diane, headers: [("If-Match", "\"0000\", \(current)")], form: [("sex", "f")])
            #expect(listed.status == 200, "\(listed.text)")
            #expect(try await PetsAPITests.table(database) != before)
        }
    }

    @Test("a delete with a stale If-Match is 412 and deletes nothing; a missing row fails If-Match too", arguments: PetsAPITests.backends)
    func delete(_ backend: SQLDialect) async throws {
        try await IdempotencyKeyTests.withPets(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let tag = try #require(try await service.get("/pets/Puffball").header("etag"))
            #expect(try await Self.send(service, "POST", "/pets/Puffball", token: diane, form: [("species", "rat")]).status == 200)
            let current = try await service.get("/pets/Puffball")

            let before = try await PetsAPITests.table(database)
            let stale = try await Self.send(service, "DELETE", "/pets/Puffball", token: diane, headers: [("If-Match", tag)])
            #expect(stale.status == 412 && stale.body == current.body && stale.header("etag") == current.header("etag"), "\(stale.text)")
            #expect(try await PetsAPITests.table(database) == before)

            let fresh = try await Self.send(service, "DELETE", "/pets/Puffball", token: diane, headers: [("If-Match", current.header("etag") ?? "")])
            #expect(fresh.status == 204)
            #expect(try await service.get("/pets/Puffball").status == 404)

            let gone = try await Self.send(service, "DELETE", "/pets/Puffball", token: diane, headers: [("If-Match", "*")])
            #expect(gone.status == 412 && gone.text.contains("If-Match"), "\(gone.status) \(gone.text)")
        }
    }

    @Test("If-None-Match: * creates only where no row is: 412 with the existing row, 201 with its ETag", arguments: PetsAPITests.backends)
    func ifNoneMatch(_ backend: SQLDialect) async throws {
        try await IdempotencyKeyTests.withPets(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let fluffy = try await service.get("/pets/Fluffy")
            let before = try await PetsAPITests.table(database)
            let taken = try await Self.send(service, "POST", "/pets", token: diane, headers: [("If-None-Match", "*")], form: [("name", "Fluffy")])
            #expect(taken.status == 412 && taken.body == fluffy.body && taken.header("etag") == fluffy.header("etag"), "\(taken.text)")
            #expect(try await PetsAPITests.table(database) == before)

            let made = try await Self.send(
                service, "POST", "/pets", token: diane, headers: [("If-None-Match", "*")], form: [("name", "Rex"), ("species", "dog")])
            #expect(made.status == 201 && made.header("location") == "/pets/Rex", "\(made.status) \(made.text)")
            let rex = try await service.get("/pets/Rex")
            #expect(made.header("etag") != nil && made.header("etag") == rex.header("etag"))
        }
    }

    @Test("concurrent writes under one ETag: exactly one applies, the others are 412 with its row", arguments: PetsAPITests.backends)
    func concurrent(_ backend: SQLDialect) async throws {
        try await IdempotencyKeyTests.withPets(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let tag = try #require(try await service.get("/pets/Bowser").header("etag"))
            let answers = try await withThrowingTaskGroup(of: (Int, HTTPTestResponse).self) { group in
                for index in 0..<12 {
                    group.addTask {
                        (index, try await Self.send(service, "POST", "/pets/Bowser", token: diane, headers: [("If-Match", tag)], form: [("species", "s\(index)")]))
                    }
                }
                var answers: [(Int, HTTPTestResponse)] = []
                for try await answer in group { answers.append(answer) }
                return answers
            }
            let winners = answers.filter { $0.1.status == 200 }
            #expect(winners.count == 1, "\(answers.map(\.1.status))")
            #expect(answers.allSatisfy { $0.1.status == 200 || $0.1.status == 412 }, "\(answers.map { "\($0.1.status) \($0.1.text)" })")
            let current = try await service.get("/pets/Bowser")
            let winner = try #require(winners.first)
            #expect(current.text.contains(#""species":"s\#(winner.0)""#), "\(current.text)")
            for (_, loser) in answers where loser.status == 412 {
                #expect(loser.body == current.body && loser.header("etag") == current.header("etag"))
            }
            #expect(try await PetsAPITests.table(database).contains(#""species":"s\#(winner.0)""#))
        }
    }

    @Test("with an Idempotency-Key a replay gets the first answer, though its If-Match is stale by then", arguments: PetsAPITests.backends)
    func replay(_ backend: SQLDialect) async throws {
        try await IdempotencyKeyTests.withPets(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let tag = try #require(try await service.get("/pets/Bowser").header("etag"))
            let headers = [("If-Match", tag), ("Idempotency-Key", "rename-bowser")]
            let first = try await Self.send(service, "POST", "/pets/Bowser", token: diane, headers: headers, form: [("species", "wolf")])
            #expect(first.status == 200)
            let after = try await PetsAPITests.table(database)
            let again = try await Self.send(service, "POST", "/pets/Bowser", token: diane, headers: headers, form: [("species", "wolf")])
            #expect(again.status == 200 && again.body == first.body && again.header("etag") == first.header("etag"), "\(again.status) \(again.text)")
            #expect(again.header("idempotent-replayed") == "true")
            #expect(try await PetsAPITests.table(database) == after)
            // A new key with the stale tag is a new request: 412.
            let stale = try await Self.send(
                service, "POST", "/pets/Bowser", token: diane, headers: [("If-Match", tag), ("Idempotency-Key", "another")], form: [("species", "wolf")])
            #expect(stale.status == 412)
        }
    }

    @Test("another owner's pet stays out of reach with its current tag (row-level security on PostgreSQL)", arguments: PetsAPITests.backends)
    func identity(_ backend: SQLDialect) async throws {
        try await IdempotencyKeyTests.withPets(backend) { service, database in
            let gwen = try await IdentityAPITests.token("Gwen")
            let tag = try #require(try await service.get("/pets/Bowser").header("etag"))
            let before = try await PetsAPITests.table(database)
            let refused = try await Self.send(service, "POST", "/pets/Bowser", token: gwen, headers: [("If-Match", tag)], form: [("species", "cat")])
            #expect(refused.status == 404, "\(refused.status) \(refused.text)")
            #expect(try await Self.send(service, "DELETE", "/pets/Bowser", token: gwen, headers: [("If-Match", tag)]).status == 404)
            #expect(try await PetsAPITests.table(database) == before)
        }
    }

    @Test("a condition on a write with no GET of its resource is a 400 naming the field, before any SQL")
    func unsupported() async throws {
        let store = try IdentityDatabase.make(.sqlite) { connection in
            try PetsLoader(sqlDirectory: Repository.sqlDirectory).load(into: connection)
        }
        defer { store.drop() }
        let database = try store.open()
        defer { database.close() }
        let shipped = try Repository.shippedEndpoints()
        let endpoints = EndpointSet(
            endpoints: shipped.endpoints.filter { !($0.method == .get && $0.path == "/pets/{name}") }, files: shipped.files)
        try await IdentityAPITests.withService(endpoints, database: database) { service in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await PetsAPITests.table(database)
            let answer = try await Self.send(service, "POST", "/pets/Bowser", token: diane, headers: [("If-Match", "*")], form: [("species", "cat")])
            #expect(answer.status == 400 && answer.text.contains("If-Match"), "\(answer.status) \(answer.text)")
            let create = try await Self.send(service, "POST", "/pets", token: diane, headers: [("If-None-Match", "*")], form: [("name", "Rex")])
            #expect(create.status == 400 && create.text.contains("If-None-Match"), "\(create.status) \(create.text)")
            #expect(try await PetsAPITests.table(database) == before)
        }
    }

    @Test("the OpenAPI document lists If-Match, If-None-Match and 412 where a GET gives the resource")
    func openAPI() throws {
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(try Repository.shippedEndpoints().openAPIDocument())) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: Any])
        func operation(_ path: String, _ method: String) -> [String: Any]? {
            (paths[path] as? [String: Any])?[method] as? [String: Any]
        }
        func headers(_ operation: [String: Any]?) -> [String] {
            ((operation?["parameters"] as? [[String: Any]]) ?? []).filter { $0["in"] as? String == "header" }.compactMap { $0["name"] as? String }
        }
        for (path, method) in [("/pets/{name}", "post"), ("/pets/{name}", "delete"), ("/pets", "post")] {
            let write = operation(path, method)
            #expect(headers(write).contains("If-Match") && headers(write).contains("If-None-Match"), "\(method) \(path)")
            #expect((write?["responses"] as? [String: Any])?["412"] != nil, "\(method) \(path)")
        }
        #expect(!headers(operation("/pets/{name}", "get")).contains("If-Match"))
        #expect((operation("/pets/{name}", "get")?["responses"] as? [String: Any])?["412"] == nil)
    }
}
