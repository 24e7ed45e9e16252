import Foundation
import HTTPTypes
import SpoutClient
import SpoutCore
import SpoutTestSupport
import Testing

/// ``SpoutClient/bulk(_:records:query:idempotencyKey:encoder:)`` against a real `spout serve`
/// of the pets, on SQLite and on PostgreSQL: an `AsyncSequence` of `Encodable`s streamed in
/// as JSON Lines and committed whole, or refused by its record with nothing committed.
@Suite("Bulk writes from SpoutClient")
struct BulkWriteClientTests {
    /// A record of `POST /events/bulk`.
    struct Event: Encodable {
        var name: String
        var date: String
        var type: String
        var remark: String?
    }

    /// A row of `POST /litters/bulk`'s keys.
    struct Kitten: Codable, Equatable {
        var name: String
        var owner: String
        var species: String
    }

    /// The pets, with `/litters`: a create that returns the row it made, bulk.
    static let litters = [
        "config/endpoints/litters.yaml": """
        description: Pets made many at once, for SpoutClient's bulk tests.
        auth:
          token: jwt
          methods: [POST]
        paths:
          /litters:
            post:
              sql: INSERT INTO pet (name, owner, species) VALUES (:name, :claims.sub, :species) RETURNING name, owner, species
              result: created
              location: /pets/{name}
              bulk: true
              parameters:
                - {name: name, type: string, required: true, maxLength: 20}
                - {name: species, type: string}
        """
    ]

    /// Runs `body` with a served pets database, and `/litters`.
    static func withPets(_ dialect: SQLDialect, _ body: (LiveSpout) async throws -> Void) async throws {
        try await SyncStoreTests.withPets(dialect, extraFiles: Self.litters, endpoints: "endpoints/pets.yaml,endpoints/litters.yaml") { server, _ in
            try await body(server)
        }
    }

    /// `count` events for Diane's pets, yielded one at a time as an `AsyncStream` yields them;
    /// record `bad` (from 0), when given, has a date that is none.
    static func events(_ count: Int, bad: Int? = nil) -> AsyncStream<Event> {
        AsyncStream { continuation in
            for number in 0..<count {
                let date = number == bad ? "tomorrow" : "2024-03-\(String(format: "%02d", number % 28 + 1))"
                continuation.yield(Event(name: number % 2 == 0 ? "Bowser" : "Puffball", date: date, type: "visit", remark: "client \(number)"))
            }
            continuation.finish()
        }
    }

    /// How many events Diane's two pets have now.
    static func eventCount(_ client: SpoutClient) async throws -> Int {
        struct Pet: Decodable { var events: [Skipped] }
        struct Skipped: Decodable { init(from decoder: any Decoder) throws {} }
        var count = 0
        for name in ["Bowser", "Puffball"] {
            count += try await client.object(Pet.self, path: "/pets/\(name)", query: [URLQueryItem(name: "details", value: "events")]).events.count
        }
        return count
    }

    @Test("20,000 records from an AsyncSequence stream in and commit; the answer counts them", arguments: SQLDialect.allCases)
    func manyRecordsCommit(_ dialect: SQLDialect) async throws {
        try await Self.withPets(dialect) { server in
            let client = server.client(SpoutClientConfiguration(headers: try await LiveSpout.authorization(sub: "Diane")))
            let before = try await Self.eventCount(client)
            let result = try await client.bulk("/events", records: Self.events(20_000))
            #expect(result.records == 20_000 && result.changed == 20_000 && !result.hasKeys && !result.isReplayed)
            #expect(try await Self.eventCount(client) == before + 20_000)
        }
    }

    @Test("a bad record throws a typed error naming its position and parameter, and nothing is committed", arguments: SQLDialect.allCases)
    func badRecordThrowsItsPosition(_ dialect: SQLDialect) async throws {
        try await Self.withPets(dialect) { server in
            let client = server.client(SpoutClientConfiguration(headers: try await LiveSpout.authorization(sub: "Diane")))
            let before = try await Self.eventCount(client)
            do {
                _ = try await client.bulk("/events", records: Self.events(20_000, bad: 12_345))
                Issue.record("a bad record was accepted")
            } catch let error as SpoutBulkRecordError {
                #expect(error.record == 12_345 && error.line == 12_346 && error.parameter == "date", "\(error)")
                #expect(error.error.status == 400 && error.error.value == "tomorrow", "\(error)")
            }
            #expect(try await Self.eventCount(client) == before)
        }
    }

    @Test("a sequence that throws midway cuts the body short: its error is thrown, nothing is committed", arguments: SQLDialect.allCases)
    func sequenceThatThrows(_ dialect: SQLDialect) async throws {
        struct SourceFailed: Error, Equatable {}
        try await Self.withPets(dialect) { server in
            let client = server.client(SpoutClientConfiguration(headers: try await LiveSpout.authorization(sub: "Diane")))
            let before = try await Self.eventCount(client)
            let failing = AsyncThrowingStream<Event, any Error> { continuation in
                for number in 0..<5_000 {
                    continuation.yield(Event(name: "Bowser", date: "2024-04-01", type: "visit", remark: "cut \(number)"))
                }
                continuation.finish(throwing: SourceFailed())
            }
            await #expect(throws: SourceFailed()) { _ = try await client.bulk("/events", records: failing) }
            #expect(try await Self.eventCount(client) == before)
        }
    }

    @Test("the keys made decode in record order; a replay under the same key answers them again", arguments: SQLDialect.allCases)
    func keysAndReplay(_ dialect: SQLDialect) async throws {
        try await Self.withPets(dialect) { server in
            let client = server.client(SpoutClientConfiguration(headers: try await LiveSpout.authorization(sub: "Diane")))
            struct Record: Encodable { var name: String; var species: String }
            let records = (1...1_500).map { Record(name: "kitten-\($0)", species: "cat") }
            let first = try await client.bulk("/litters", records: Self.stream(records), idempotencyKey: "litter-1")
            #expect(first.records == 1_500 && first.hasKeys)
            let keys = try first.keys(Kitten.self)
            #expect(keys == records.map { Kitten(name: $0.name, owner: "Diane", species: "cat") })
            let again = try await client.bulk("/litters", records: Self.stream(records), idempotencyKey: "litter-1")
            #expect(again.isReplayed && again.body == first.body)
        }
    }

    /// `elements` as an `AsyncSequence`.
    static func stream<Element: Sendable>(_ elements: [Element]) -> AsyncStream<Element> {
        AsyncStream { continuation in
            for element in elements { continuation.yield(element) }
            continuation.finish()
        }
    }
}
