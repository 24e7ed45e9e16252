import Foundation
import SpoutCore
import SpoutData
import SpoutDrivers
import SpoutEndpoints
import SpoutHTTP
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Bulk writes streamed in (issue #61), through real sockets on each database: `POST
/// /events/bulk` of the pets API takes a JSON array, JSON Lines or CSV, runs each record in one
/// transaction, and commits nothing when a record is refused or the client goes away.
@Suite("Bulk writes")
struct BulkWriteTests {
    /// The shipped endpoints on a pets database Spout reaches as an ordinary role (row-level
    /// security applies on PostgreSQL), with the table of idempotent answers.
    static func withPets(
        _ backend: SQLDialect, configuration: ServerConfiguration = InProcessServer.testConfiguration,
        _ body: (InProcessServer, Database) async throws -> Void
    ) async throws {
        try await IdempotencyKeyTests.withPets(backend, configuration: configuration, body)
    }

    static func bulk(
        _ service: InProcessServer, _ body: [UInt8], contentType: String, token: String, key: String? = nil, path: String = "/events/bulk"
    ) async throws -> HTTPTestResponse {
        var headers = [("Content-Type", contentType), ("Authorization", "Bearer \(token)")]
        if let key { headers.append(("Idempotency-Key", key)) }
        return try await RawHTTP.get(port: service.port, path, method: "POST", headers: headers, body: body, timeout: 300)
    }

    static func eventCount(_ database: Database) async throws -> Int {
        try await onThread {
            let sink = CollectingSink()
            try database.query("SELECT count(*) AS n FROM event").write(as: .json(), to: sink)
            return Int(sink.text.filter(\.isNumber))!
        }
    }

    /// `count` events as JSON Lines, for Diane's pets (Bowser and Puffball), one line each.
    static func jsonLines(_ count: Int, replacing line: (number: Int, text: String)? = nil) -> [UInt8] {
        var text = ""
        text.reserveCapacity(count * 80)
        for number in 1...count {
            if let line, line.number == number {
                text += line.text + "\n"
            } else {
                let name = number % 2 == 0 ? "Bowser" : "Puffball"
                let day = String(format: "%02d", number % 28 + 1)
                text += "{\"name\":\"\(name)\",\"date\":\"2024-01-\(day)\",\"type\":\"visit\",\"remark\":\"record \(number)\"}\n"
            }
        }
        return Array(text.utf8)
    }

    @Test("a JSON array, JSON Lines and CSV each add every record and answer the counts", arguments: PetsAPITests.backends)
    func formats(_ backend: SQLDialect) async throws {
        try await Self.withPets(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await Self.eventCount(database)
            let array = #"[{"name":"Bowser","date":"2024-02-01","type":"vet","remark":"teeth"},{"name":"Puffball","date":"2024-02-02","type":"vet"}]"#
            let json = try await Self.bulk(service, Array(array.utf8), contentType: "application/json", token: diane)
            #expect(json.status == 200 && json.text == #"{"records":2,"changed":2}"#, "\(json.status) \(json.text)")
            let lines = try await Self.bulk(service, Self.jsonLines(3), contentType: "application/x-ndjson", token: diane)
            #expect(lines.status == 200 && lines.text == #"{"records":3,"changed":3}"#, "\(lines.status) \(lines.text)")
            let csv = "name,date,type,remark\nBowser,2024-03-01,vet,\"teeth, again\"\nPuffball,2024-03-02,birthday,\n"
            let table = try await Self.bulk(service, Array(csv.utf8), contentType: "text/csv", token: diane)
            #expect(table.status == 200 && table.text == #"{"records":2,"changed":2}"#, "\(table.status) \(table.text)")
            #expect(try await Self.eventCount(database) == before + 7)
            let events = try await service.get("/pets/Bowser?details=events").text
            #expect(events.contains(#""remark":"teeth, again""#))

            let form = try await Self.bulk(service, Array("name=Bowser".utf8), contentType: "application/x-www-form-urlencoded", token: diane)
            #expect(form.status == 415, "\(form.status) \(form.text)")
            let anonymous = try await RawHTTP.get(
                port: service.port, "/events/bulk", method: "POST", headers: [("Content-Type", "application/jsonl")], body: Self.jsonLines(1))
            #expect(anonymous.status == 401)
            let conditional = try await RawHTTP.get(
                port: service.port, "/events/bulk", method: "POST",
                headers: [("Content-Type", "application/jsonl"), ("Authorization", "Bearer \(diane)"), ("If-Match", "*")], body: Self.jsonLines(1))
            #expect(conditional.status == 400 && conditional.text.contains("If-Match"), "\(conditional.status) \(conditional.text)")
            #expect(try await Self.eventCount(database) == before + 7)
        }
    }

    @Test("a bad record at position 50,000 commits nothing and names the position and the parameter", arguments: PetsAPITests.backends)
    func badRecordDeepInTheBody(_ backend: SQLDialect) async throws {
        try await Self.withPets(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await Self.eventCount(database)
            let bad = #"{"name":"Bowser","date":"not a date","type":"vet"}"#
            let lines = try await Self.bulk(
                service, Self.jsonLines(60_000, replacing: (50_000, bad)), contentType: "application/x-ndjson", token: diane)
            #expect(lines.status == 400, "\(lines.status) \(lines.text)")
            #expect(lines.text.contains(#""line":50000"#) && lines.text.contains(#""parameter":"date""#), "\(lines.text)")

            // Array index 50,000 is the 50,001st record; its type is longer than event.type takes.
            var records = Self.jsonLines(50_001).split(separator: UInt8(ascii: "\n")).map { Array($0) }
            records[50_000] = Array(#"{"name":"Bowser","date":"2024-01-01","type":"a type far too long"}"#.utf8)
            let array = [UInt8(ascii: "[")] + Array(records.joined(separator: [UInt8(ascii: ",")])) + [UInt8(ascii: "]")]
            let json = try await Self.bulk(service, array, contentType: "application/json", token: diane)
            #expect(json.status == 400, "\(json.status) \(json.text)")
            #expect(json.text.contains(#""index":50000"#) && json.text.contains(#""parameter":"type""#), "\(json.text)")
            #expect(try await Self.eventCount(database) == before)
        }
    }

    @Test("a record for another owner's pet is refused by its position, and nothing is committed", arguments: PetsAPITests.backends)
    func anotherOwnersPet(_ backend: SQLDialect) async throws {
        try await Self.withPets(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await Self.eventCount(database)
            // Claws is Gwen's.
            let csv = "name,date,type\nBowser,2024-03-01,vet\nPuffball,2024-03-02,vet\nClaws,2024-03-03,vet\nBowser,2024-03-04,vet\n"
            let refused = try await Self.bulk(service, Array(csv.utf8), contentType: "text/csv", token: diane)
            #expect(refused.status == 422 && refused.text.hasPrefix(#"{"line":4,"#), "\(refused.status) \(refused.text)")
            #expect(try await Self.eventCount(database) == before)
            // The same record alone, as a single write, is the 404 of another owner's pet.
            let single = try await IdentityAPITests.send(
                service, "POST", "/events", token: diane, form: [("name", "Claws"), ("date", "2024-03-03"), ("type", "vet")])
            #expect(single.status == 404, "\(single.status) \(single.text)")
        }
    }

    @Test("row-level security refuses a record the statement itself would write (PostgreSQL)")
    func rowLevelSecurity() async throws {
        guard TestDatabases.postgresEnabled else { return }
        try await BulkWritePipelineTests.withRawEvents(.postgres) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await Self.eventCount(database)
            let body = "{\"name\":\"Bowser\",\"date\":\"2024-03-01\",\"type\":\"vet\"}\n{\"name\":\"Claws\",\"date\":\"2024-03-01\",\"type\":\"vet\"}\n"
            let refused = try await RawHTTP.get(
                port: service.port, "/raw-events/bulk", method: "POST",
                headers: [("Content-Type", "application/jsonl"), ("Authorization", "Bearer \(diane)")], body: Array(body.utf8))
            #expect(refused.status == 403 && refused.text == #"{"line":2,"error":"permission denied"}"#, "\(refused.status) \(refused.text)")
            #expect(try await Self.eventCount(database) == before)
            let own = try await RawHTTP.get(
                port: service.port, "/raw-events/bulk", method: "POST",
                headers: [("Content-Type", "application/jsonl"), ("Authorization", "Bearer \(diane)")],
                body: Array(body.split(separator: "\n")[0].utf8))
            #expect(own.status == 200 && own.text == #"{"records":1,"changed":1}"#, "\(own.status) \(own.text)")
        }
    }

    @Test("a client that goes away mid-body commits nothing, though records ran", arguments: PetsAPITests.backends)
    func clientGoesAway(_ backend: SQLDialect) async throws {
        try await Self.withPets(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await Self.eventCount(database)
            // Records reach the database as statements, or as rows of a COPY (PostgreSQL's set writes).
            func sent() -> Int { database.statistics.statementCount + database.statistics.copiedRowCount }
            let statements = sent()
            let connection = try await HTTPTestConnection.connect(port: service.port)
            let head = "POST /events/bulk HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\n"
                + "Authorization: Bearer \(diane)\r\nContent-Length: 100000000\r\n\r\n"
            try await connection.run { connection in
                try connection.send(head)
                try connection.send(Self.jsonLines(5_000))
            }
            // The records sent reached the database before the client goes.
            let ran = try await poll({ sent() - statements }, until: { $0 >= 5_000 })
            #expect(ran >= 5_000)
            connection.closeNow()
            let inUse = try await poll({ database.poolState.inUse }, until: { $0 == 0 })
            #expect(inUse == 0)
            #expect(try await Self.eventCount(database) == before)
        }
    }

    @Test("an Idempotency-Key on a bulk write: a replay gets the first answer and applies nothing; another body is 422", arguments: PetsAPITests.backends)
    func idempotencyKey(_ backend: SQLDialect) async throws {
        try await Self.withPets(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await Self.eventCount(database)
            let first = try await Self.bulk(service, Self.jsonLines(100), contentType: "application/jsonl", token: diane, key: "bulk-1")
            #expect(first.status == 200 && first.header("idempotent-replayed") == nil, "\(first.status) \(first.text)")
            let again = try await Self.bulk(service, Self.jsonLines(100), contentType: "application/jsonl", token: diane, key: "bulk-1")
            #expect(again.status == 200 && again.body == first.body && again.header("idempotent-replayed") == "true", "\(again.status) \(again.text)")
            let other = try await Self.bulk(service, Self.jsonLines(99), contentType: "application/jsonl", token: diane, key: "bulk-1")
            #expect(other.status == 422, "\(other.status) \(other.text)")
            #expect(try await Self.eventCount(database) == before + 100)
        }
    }

    @Test("a body far larger than the buffered-body budget streams in, a piece at a time", arguments: PetsAPITests.backends)
    func boundedMemory(_ backend: SQLDialect) async throws {
        var configuration = InProcessServer.testConfiguration
        configuration.maximumBodySize = 64 * 1024
        configuration.maximumBufferedBodyBytes = 64 * 1024
        try await Self.withPets(backend, configuration: configuration) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await Self.eventCount(database)
            let body = Self.jsonLines(40_000)
            #expect(body.count > 40 * configuration.maximumBufferedBodyBytes)
            // A body read whole is refused at this size.
            let whole = try await RawHTTP.get(
                port: service.port, "/events", method: "POST",
                headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(diane)")], body: body)
            #expect(whole.status == 413)
            // Sent in pieces, with pauses, over one connection.
            let connection = try await HTTPTestConnection.connect(port: service.port)
            let answer = try await connection.run { connection in
                try connection.send(
                    "POST /events/bulk HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\n"
                        + "Authorization: Bearer \(diane)\r\nContent-Length: \(body.count)\r\n\r\n")
                var start = 0
                while start < body.count {
                    let end = min(start + 256 * 1024, body.count)
                    try connection.send(Array(body[start..<end]))
                    start = end
                    Thread.sleep(forTimeInterval: 0.01)
                }
                return try connection.readResponse()
            }
            #expect(answer.status == 200 && answer.text == #"{"records":40000,"changed":40000}"#, "\(answer.status) \(answer.text)")
            #expect(try await Self.eventCount(database) == before + 40_000)
            // The connection stays open for the next request.
            #expect(try await connection.request("GET", "/pets/Bowser").status == 200)
        }
    }
}
