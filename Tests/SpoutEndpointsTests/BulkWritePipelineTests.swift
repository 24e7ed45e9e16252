import SpoutCore
import SpoutData
import SpoutEndpoints
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Bulk writes whose records are pipelined (``SpoutCore/WritePipeline``): up to a window of
/// records in flight, answered in order. A failure anywhere in a window (its first record,
/// one in the middle, its last, the body's last) names that record and commits nothing;
/// windows that end exactly at the body's end answer every record. On both databases (SQLite
/// runs the same pipeline one statement at a time).
@Suite("Bulk writes, pipelined")
struct BulkWritePipelineTests {
    /// `BulkWrite.window`: the records in flight at most. Answers are read when it is full,
    /// down to half of it.
    static let window = 1024

    /// The positions around the windows of a body of `3 * window` records: the first
    /// record, the last before answers are first read, the first after, a middle one, window
    /// edges, the last of the body.
    static let positions = [1, window / 2, window / 2 + 1, window - 1, window, window + 1, 2 * window, 3 * window]

    /// `/raw-events/bulk`: events for any pet, no owner check in the statement (row-level
    /// security checks it on PostgreSQL), `type` optional, so that a record without one fails
    /// in the database (`NOT NULL`), after it was sent. `dateType`: the `date` parameter's
    /// type (`string` leaves the value to the database's judgement).
    static func withRawEvents(
        _ backend: SQLDialect, dateType: String = "date", _ body: (InProcessServer, Database) async throws -> Void
    ) async throws {
        try await Self.withEndpoints(
            backend,
            """
            auth:
              token: jwt
              methods: [POST]
            paths:
              /raw-events:
                post:
                  sql: INSERT INTO event (name, "date", type) VALUES (:name, :date, :type)
                  result: none
                  bulk: true
                  parameters:
                    - {name: name, type: string, required: true}
                    - {name: date, type: \(dateType), required: true}
                    - {name: type, type: string}
            """, body)
    }

    /// The pets API's tables (row-level security included, on PostgreSQL) served by the
    /// endpoints of `yaml`.
    static func withEndpoints(_ backend: SQLDialect, _ yaml: String, _ body: (InProcessServer, Database) async throws -> Void) async throws {
        let store = try IdentityDatabase.make(backend) { connection in
            try PetsLoader(sqlDirectory: Repository.sqlDirectory).load(into: connection)
        }
        defer { store.drop() }
        let endpoints = try store.endpoints(yaml)
        let database = try store.open()
        defer { database.close() }
        try await IdentityAPITests.withService(endpoints, database: database) { service in
            try await body(service, database)
        }
    }

    static func post(_ service: InProcessServer, _ path: String, _ body: [UInt8], token: String) async throws -> HTTPTestResponse {
        try await BulkWriteTests.bulk(service, body, contentType: "application/x-ndjson", token: token, path: path)
    }

    /// For each of `lines`, posts `count` records as JSON Lines with that line replaced by
    /// `bad`: each answer must have a status in `status`, start by naming the line and
    /// contain `naming`, and nothing may be committed.
    static func expectRefused(
        _ service: InProcessServer, _ database: Database, path: String, count: Int, lines: [Int], bad: String,
        status: Range<Int>, naming: String = "", token: String
    ) async throws {
        let before = try await BulkWriteTests.eventCount(database)
        for line in lines {
            let refused = try await Self.post(service, path, BulkWriteTests.jsonLines(count, replacing: (line, bad)), token: token)
            #expect(status.contains(refused.status), "line \(line): \(refused.status) \(refused.text)")
            #expect(refused.text.hasPrefix("{\"line\":\(line),") && (naming.isEmpty || refused.text.contains(naming)), "line \(line): \(refused.text)")
            #expect(try await BulkWriteTests.eventCount(database) == before, "line \(line)")
        }
    }

    @Test("a statement failing in the database anywhere in a window names its record and commits nothing", arguments: PetsAPITests.backends)
    func databaseFailureInAWindow(_ backend: SQLDialect) async throws {
        try await Self.withRawEvents(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await BulkWriteTests.eventCount(database)
            let untyped = #"{"name":"Bowser","date":"2024-01-01"}"#
            try await Self.expectRefused(
                service, database, path: "/raw-events/bulk", count: 3 * Self.window, lines: Self.positions, bad: untyped, status: 400..<500,
                token: diane)
            // Two failing records: the first is named.
            var body = BulkWriteTests.jsonLines(2 * Self.window, replacing: (Self.window + 7, untyped))
            body += Array((untyped + "\n").utf8)
            let first = try await Self.post(service, "/raw-events/bulk", body, token: diane)
            #expect(first.text.hasPrefix("{\"line\":\(Self.window + 7),"), "\(first.text)")
            #expect(try await BulkWriteTests.eventCount(database) == before)
        }
    }

    @Test("a record that changes nothing anywhere in a window is a 422 naming it, and nothing is committed", arguments: PetsAPITests.backends)
    func recordChangingNothingInAWindow(_ backend: SQLDialect) async throws {
        try await BulkWriteTests.withPets(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            // Claws is Gwen's: the owner check finds no row.
            let claws = #"{"name":"Claws","date":"2024-03-03","type":"vet"}"#
            try await Self.expectRefused(
                service, database, path: "/events/bulk", count: 3 * Self.window, lines: Self.positions, bad: claws, status: 422..<423, token: diane)
        }
    }

    @Test("bodies that end at, just before and just after a window's edge answer every record", arguments: PetsAPITests.backends)
    func windowEdgeAtTheBodysEnd(_ backend: SQLDialect) async throws {
        try await Self.withRawEvents(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            var expected = try await BulkWriteTests.eventCount(database)
            for count in [Self.window / 2, Self.window - 1, Self.window, Self.window + 1, 2 * Self.window] {
                let added = try await Self.post(service, "/raw-events/bulk", BulkWriteTests.jsonLines(count), token: diane)
                #expect(added.status == 200 && added.text == "{\"records\":\(count),\"changed\":\(count)}", "\(count): \(added.status) \(added.text)")
                expected += count
                #expect(try await BulkWriteTests.eventCount(database) == expected, "\(count)")
            }
        }
    }
}
