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
    /// in the database (`NOT NULL`), after it was sent.
    static func withRawEvents(_ backend: SQLDialect, _ body: (InProcessServer, Database) async throws -> Void) async throws {
        let store = try IdentityDatabase.make(backend) { connection in
            try PetsLoader(sqlDirectory: Repository.sqlDirectory).load(into: connection)
        }
        defer { store.drop() }
        let endpoints = try store.endpoints("""
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
                    - {name: date, type: date, required: true}
                    - {name: type, type: string}
            """)
        let database = try store.open()
        defer { database.close() }
        try await IdentityAPITests.withService(endpoints, database: database) { service in
            try await body(service, database)
        }
    }

    static func post(_ service: InProcessServer, _ path: String, _ body: [UInt8], token: String) async throws -> HTTPTestResponse {
        try await BulkWriteTests.bulk(service, body, contentType: "application/x-ndjson", token: token, path: path)
    }

    @Test("a statement failing in the database anywhere in a window names its record and commits nothing", arguments: PetsAPITests.backends)
    func databaseFailureInAWindow(_ backend: SQLDialect) async throws {
        try await Self.withRawEvents(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await BulkWriteTests.eventCount(database)
            let untyped = #"{"name":"Bowser","date":"2024-01-01"}"#
            for line in Self.positions {
                let body = BulkWriteTests.jsonLines(3 * Self.window, replacing: (line, untyped))
                let refused = try await Self.post(service, "/raw-events/bulk", body, token: diane)
                #expect((400..<500).contains(refused.status), "line \(line): \(refused.status) \(refused.text)")
                #expect(refused.text.hasPrefix("{\"line\":\(line),"), "line \(line): \(refused.text)")
                #expect(try await BulkWriteTests.eventCount(database) == before, "line \(line)")
            }
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
            let before = try await BulkWriteTests.eventCount(database)
            // Claws is Gwen's: the owner check finds no row.
            let claws = #"{"name":"Claws","date":"2024-03-03","type":"vet"}"#
            for line in Self.positions {
                let body = BulkWriteTests.jsonLines(3 * Self.window, replacing: (line, claws))
                let refused = try await Self.post(service, "/events/bulk", body, token: diane)
                #expect(refused.status == 422 && refused.text.hasPrefix("{\"line\":\(line),"), "line \(line): \(refused.status) \(refused.text)")
                #expect(try await BulkWriteTests.eventCount(database) == before, "line \(line)")
            }
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
