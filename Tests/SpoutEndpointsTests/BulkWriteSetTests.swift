import SpoutCore
import SpoutEndpoints
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Bulk writes applied as sets (``SpoutCore/SetWrite``): on PostgreSQL the records of an
/// insert are copied into a temporary table and inserted a chunk at a time. The answers must
/// be those of the records run one by one: the counts, and the first failing record named,
/// wherever it is among the chunks, with nothing committed. SQLite runs the records one by one
/// and must answer the same.
@Suite("Bulk writes, as sets")
struct BulkWriteSetTests {
    /// `PostgresSetWrite.chunk`: the records one insert statement runs over.
    static let chunk = 8192

    /// Positions around the chunks of a body of `2 * chunk + 100` records.
    static let positions = [1, chunk, chunk + 1, chunk + 4321, 2 * chunk, 2 * chunk + 100]

    @Test("many records are copied in and inserted in a few statements (PostgreSQL), one each on SQLite", arguments: PetsAPITests.backends)
    func fewStatements(_ backend: SQLDialect) async throws {
        try await BulkWritePipelineTests.withRawEvents(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await BulkWriteTests.eventCount(database)
            let statements = database.statistics.statementCount
            let copied = database.statistics.copiedRowCount
            let count = 2 * Self.chunk + 100
            let added = try await BulkWritePipelineTests.post(service, "/raw-events/bulk", BulkWriteTests.jsonLines(count), token: diane)
            #expect(added.status == 200 && added.text == "{\"records\":\(count),\"changed\":\(count)}", "\(added.status) \(added.text)")
            #expect(try await BulkWriteTests.eventCount(database) == before + count)
            let ran = database.statistics.statementCount - statements
            if backend == .postgres {
                #expect(database.statistics.copiedRowCount - copied == count)
                #expect(ran < 20, "\(ran) statements")
            } else {
                #expect(ran >= count)
            }
        }
    }

    @Test("a record failing in the database in any chunk is named, and nothing is committed", arguments: PetsAPITests.backends)
    func failureInAnyChunk(_ backend: SQLDialect) async throws {
        try await BulkWritePipelineTests.withRawEvents(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            // No type: NOT NULL fails in the database.
            try await BulkWritePipelineTests.expectRefused(
                service, database, path: "/raw-events/bulk", count: 2 * Self.chunk + 100, lines: Self.positions,
                bad: #"{"name":"Bowser","date":"2024-01-01"}"#, status: 422..<423, naming: #""parameter":"type""#, token: diane)
        }
    }

    @Test("a record that changes nothing in any chunk is a 422 naming it, as a JSON array's index", arguments: PetsAPITests.backends)
    func changingNothingInAnyChunk(_ backend: SQLDialect) async throws {
        try await BulkWriteTests.withPets(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await BulkWriteTests.eventCount(database)
            // Claws is Gwen's: the owner check finds no row.
            let claws = #"{"name":"Claws","date":"2024-03-03","type":"vet"}"#
            for index in [0, Self.chunk - 1, Self.chunk + 9] {
                var records = BulkWriteTests.jsonLines(2 * Self.chunk).split(separator: UInt8(ascii: "\n")).map { Array($0) }
                records[index] = Array(claws.utf8)
                let array = [UInt8(ascii: "[")] + Array(records.joined(separator: [UInt8(ascii: ",")])) + [UInt8(ascii: "]")]
                let refused = try await BulkWriteTests.bulk(service, array, contentType: "application/json", token: diane)
                #expect(refused.status == 422 && refused.text.hasPrefix("{\"index\":\(index),"), "index \(index): \(refused.status) \(refused.text)")
                #expect(try await BulkWriteTests.eventCount(database) == before, "index \(index)")
            }
        }
    }

    @Test("a value only PostgreSQL refuses, or one it cannot hold, names its record", .enabled(if: TestDatabases.postgresEnabled))
    func valueTheDatabaseRefuses() async throws {
        // The date is any text here: PostgreSQL's date type judges it (SQLite keeps any text).
        try await BulkWritePipelineTests.withRawEvents(.postgres, dateType: "string") { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await BulkWriteTests.eventCount(database)
            let line = Self.chunk + 3
            for bad in [#"{"name":"Bowser","date":"2024-02-30","type":"vet"}"#, #"{"name":"Bowser","date":"2024-02-01","type":"v\u0000t"}"#] {
                let body = BulkWriteTests.jsonLines(Self.chunk + 10, replacing: (line, bad))
                let refused = try await BulkWritePipelineTests.post(service, "/raw-events/bulk", body, token: diane)
                #expect((400..<500).contains(refused.status) && refused.text.contains("\"line\":\(line),"), "\(bad): \(refused.status) \(refused.text)")
                #expect(try await BulkWriteTests.eventCount(database) == before)
            }
        }
    }
}
