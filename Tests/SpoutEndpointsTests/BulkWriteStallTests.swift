import Foundation
import SpoutCore
import SpoutEndpoints
import SpoutHTTP
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// A bulk body that comes slowly (a phone on a poor network, or a client trickling on
/// purpose) must not hold the database while it waits: on SQLite its transaction would lock
/// every other writer out for as long as the client liked. Through real sockets on each
/// database: once the write has waited its stall budget for records, its transaction is
/// given up, the rest of the body is kept whole, and the records run once it has ended.
@Suite("Bulk writes with a slow body")
struct BulkWriteStallTests {
    /// The shipped endpoints on a pets database, a bulk body kept up to `keptLimit` bytes, at
    /// most `keptBodies` at once.
    static func withPets(
        _ backend: SQLDialect, keptLimit: Int = 1 << 30, keptBodies: Int = 64, _ body: (InProcessServer, Database) async throws -> Void
    ) async throws {
        try await IdempotencyKeyTests.withPets(
            backend,
            adjusting: {
                $0.keptBulkBodyLimit = keptLimit
                $0.maximumKeptBulkBodies = keptBodies
            }, body)
    }

    /// Opens a bulk write of JSON Lines whose body is announced as `length` bytes and sends its
    /// first `records` lines; the rest is the test's to send.
    static func startBulk(
        _ service: InProcessServer, token: String, records: Int, length: Int, key: String? = nil
    ) async throws -> HTTPTestConnection {
        let connection = try await HTTPTestConnection.connect(port: service.port)
        let keyField = key.map { "Idempotency-Key: \($0)\r\n" } ?? ""
        try await connection.run { connection in
            try connection.send(
                "POST /events/bulk HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\n"
                    + "Authorization: Bearer \(token)\r\n\(keyField)Content-Length: \(length)\r\n\r\n")
            try connection.send(BulkWriteTests.jsonLines(records))
        }
        return connection
    }

    /// Records that reached `database`: as statements, or as rows of a COPY (PostgreSQL's set writes).
    static func recordsRun(_ database: Database) -> Int {
        database.statistics.statementCount + database.statistics.copiedRowCount
    }

    /// Waits until `records` more than `before` reached `database` (``recordsRun(_:)``), then
    /// until no connection is in use: the bulk write gave its transaction up while its body is
    /// still coming. Both are states a slow poll cannot miss.
    static func transactionGivenUp(_ database: Database, records: Int, before: Int) async throws -> Bool {
        guard try await poll({ Self.recordsRun(database) - before }, until: { $0 >= records }) >= records else { return false }
        return try await poll({ database.poolState.inUse }, until: { $0 == 0 }) == 0
    }

    /// ``startBulk(_:token:records:length:key:)``, then expects the write to give its
    /// transaction up (``transactionGivenUp(_:records:before:)``) while the rest is unsent.
    static func startStalledBulk(
        _ service: InProcessServer, _ database: Database, token: String, records: Int, length: Int,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> HTTPTestConnection {
        let ran = Self.recordsRun(database)
        let connection = try await Self.startBulk(service, token: token, records: records, length: length)
        #expect(try await Self.transactionGivenUp(database, records: records, before: ran), sourceLocation: sourceLocation)
        return connection
    }

    /// Sends the rest of `body`, from the end of its first `after` JSON lines, and reads the answer.
    static func finish(_ connection: HTTPTestConnection, _ body: [UInt8], after records: Int) async throws -> HTTPTestResponse {
        try await connection.run { connection in
            try connection.send(Array(body[BulkWriteTests.jsonLines(records).count...]))
            return try connection.readResponse()
        }
    }

    /// One event for Bowser by `token`'s owner, written alone: what another of the owner's
    /// devices sends meanwhile.
    static func singleWrite(_ service: InProcessServer, token: String) async throws -> HTTPTestResponse {
        try await RawHTTP.get(
            port: service.port, "/events", method: "POST",
            headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Authorization", "Bearer \(token)")],
            body: Array("name=Bowser&date=2024-05-01&type=walk".utf8), timeout: 10)
    }

    @Test("a stalled body gives its transaction up: other writes go on, and its records commit once it is whole", arguments: PetsAPITests.backends)
    func stalledBodyCommitsLater(_ backend: SQLDialect) async throws {
        try await Self.withPets(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await BulkWriteTests.eventCount(database)
            let body = BulkWriteTests.jsonLines(2_000)
            let connection = try await Self.startStalledBulk(service, database, token: diane, records: 1_000, length: body.count)
            // Another write meanwhile, on SQLite the one writer's: it does not wait for the bulk body.
            let single = try await Self.singleWrite(service, token: diane)
            #expect(single.status == 204, "\(single.status) \(single.text)")
            #expect(try await BulkWriteTests.eventCount(database) == before + 1)
            let answer = try await Self.finish(connection, body, after: 1_000)
            #expect(answer.status == 200 && answer.text == #"{"records":2000,"changed":2000}"#, "\(answer.status) \(answer.text)")
            #expect(try await BulkWriteTests.eventCount(database) == before + 2_001)
        }
    }

    @Test("a refused record after the stall is answered at once, naming its line, and nothing is committed", arguments: PetsAPITests.backends)
    func refusedRecordAfterStall(_ backend: SQLDialect) async throws {
        try await Self.withPets(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await BulkWriteTests.eventCount(database)
            let connection = try await Self.startStalledBulk(service, database, token: diane, records: 10, length: 10_000_000)
            let answer = try await connection.run { connection in
                try connection.send(#"{"name":"Bowser","date":"tomorrow","type":"vet"}"# + "\n")
                return try connection.readResponse()
            }
            #expect(answer.status == 400, "\(answer.status) \(answer.text)")
            #expect(answer.text.contains(#""line":11"#) && answer.text.contains(#""parameter":"date""#), "\(answer.text)")
            #expect(try await BulkWriteTests.eventCount(database) == before)
        }
    }

    @Test("a client that goes away after the stall commits nothing", arguments: PetsAPITests.backends)
    func clientGoneAfterStall(_ backend: SQLDialect) async throws {
        try await Self.withPets(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await BulkWriteTests.eventCount(database)
            let connection = try await Self.startStalledBulk(service, database, token: diane, records: 500, length: 10_000_000)
            connection.closeNow()
            // The server is free for the next bulk write, which commits alone.
            let next = try await BulkWriteTests.bulk(service, BulkWriteTests.jsonLines(3), contentType: "application/x-ndjson", token: diane)
            #expect(next.status == 200 && next.text == #"{"records":3,"changed":3}"#, "\(next.status) \(next.text)")
            #expect(try await BulkWriteTests.eventCount(database) == before + 3)
        }
    }

    @Test("a stalled body past what is kept is a 413 that commits nothing", arguments: PetsAPITests.backends)
    func stalledBodyTooLargeToKeep(_ backend: SQLDialect) async throws {
        try await Self.withPets(backend, keptLimit: 64 * 1024) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await BulkWriteTests.eventCount(database)
            let body = BulkWriteTests.jsonLines(4_000)
            #expect(body.count > 4 * 64 * 1024)
            let connection = try await Self.startStalledBulk(service, database, token: diane, records: 10, length: body.count)
            let answer = try await connection.run { connection in
                try? connection.send(Array(body[BulkWriteTests.jsonLines(10).count...]))
                return try connection.readResponse()
            }
            #expect(answer.status == 413, "\(answer.status) \(answer.text)")
            #expect(answer.text.contains("nothing was committed"), "\(answer.text)")
            #expect(try await BulkWriteTests.eventCount(database) == before)
        }
    }

    @Test("a body that stalls while as many as are kept at once are is a 503 that commits nothing", arguments: PetsAPITests.backends)
    func tooManyStalledBodies(_ backend: SQLDialect) async throws {
        try await Self.withPets(backend, keptBodies: 1) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await BulkWriteTests.eventCount(database)
            let body = BulkWriteTests.jsonLines(20)
            let kept = try await Self.startStalledBulk(service, database, token: diane, records: 10, length: body.count)
            // The one slot is taken: the next slow body is refused once it stalls.
            let refused = try await Self.startBulk(service, token: diane, records: 10, length: body.count)
            let answer = try await refused.run { try $0.readResponse() }
            #expect(answer.status == 503 && answer.header("retry-after") == "1", "\(answer.status) \(answer.text)")
            let done = try await Self.finish(kept, body, after: 10)
            #expect(done.status == 200 && done.text == #"{"records":20,"changed":20}"#, "\(done.status) \(done.text)")
            #expect(try await BulkWriteTests.eventCount(database) == before + 20)
            // The slot is free again: the next slow body is kept, not refused.
            let again = try await Self.startStalledBulk(service, database, token: diane, records: 10, length: body.count)
            let last = try await Self.finish(again, body, after: 10)
            #expect(last.status == 200, "\(last.status) \(last.text)")
            #expect(try await BulkWriteTests.eventCount(database) == before + 40)
        }
    }

    @Test("a replay under its key whose body comes slowly holds no connection, and gets the first answer", arguments: PetsAPITests.backends)
    func slowReplay(_ backend: SQLDialect) async throws {
        try await Self.withPets(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let body = BulkWriteTests.jsonLines(20)
            let first = try await BulkWriteTests.bulk(service, body, contentType: "application/x-ndjson", token: diane, key: "slow-replay")
            #expect(first.status == 200, "\(first.status) \(first.text)")
            let after = try await BulkWriteTests.eventCount(database)
            let replay = try await Self.startBulk(service, token: diane, records: 10, length: body.count, key: "slow-replay")
            // The key was looked up, and the body is read without a connection held.
            try await Task.sleep(for: .milliseconds(1_500))
            #expect(database.poolState.inUse == 0)
            let single = try await Self.singleWrite(service, token: diane)
            #expect(single.status == 204, "\(single.status) \(single.text)")
            let answer = try await Self.finish(replay, body, after: 10)
            #expect(answer.status == 200 && answer.body == first.body && answer.header("idempotent-replayed") == "true", "\(answer.status) \(answer.text)")
            #expect(try await BulkWriteTests.eventCount(database) == after + 1)
        }
    }
}
