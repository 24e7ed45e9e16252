import Foundation
import SpoutCore
import Testing

@testable import SpoutPostgres

/// Server cursors that read ahead (`QueryOptions(prefetch: true)`): the next `FETCH` is sent as
/// soon as a batch arrives.
@Suite(.serialized)
struct PostgresPrefetchTests {
    @Test(.enabled(if: PostgresTestEnvironment.isEnabled))
    func readsEveryRowInOrderAndHoldsTheConnection() throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        try connection.begin(readOnly: true)
        let parsed = try ParsedSQL("SELECT g FROM generate_series(1, 2500) g", dialect: .postgres)
        let cursor = try connection.query(parsed, [], options: QueryOptions(interleaved: true, batchSize: 1_000, prefetch: true))
        var seen: [Int64] = []
        while try cursor.next() {
            guard case .integer(let value) = cursor.value(at: 0) else { break }
            seen.append(value)
            // While a FETCH is ahead, no other statement may run on the connection.
            if seen.count == 10 {
                let busy = #expect(throws: DatabaseError.self) { _ = try connection.scalar("SELECT 1") }
                #expect(busy?.code == .unsupported)
            }
        }
        #expect(seen == Array(1...2500))
        #expect(try connection.scalar("SELECT 1") == .integer(1))
        try connection.commit()
    }

    @Test(.enabled(if: PostgresTestEnvironment.isEnabled))
    func closingEarlyDropsTheFetchAheadAndKeepsTheConnection() throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        try connection.begin(readOnly: true)
        let parsed = try ParsedSQL("SELECT g FROM generate_series(1, 100000) g", dialect: .postgres)
        let cursor = try connection.query(parsed, [], options: QueryOptions(interleaved: true, batchSize: 1_000, prefetch: true))
        #expect(try cursor.next())
        cursor.close()
        #expect(try connection.scalar("SELECT 41 + 1") == .integer(42))
        try connection.commit()
        // Released with a FETCH ahead: reset reads it back and the connection is reused.
        try connection.begin(readOnly: true)
        let open = try connection.query(parsed, [], options: QueryOptions(interleaved: true, batchSize: 1_000, prefetch: true))
        #expect(try open.next())
        #expect(connection.reset())
        #expect(!connection.isInTransaction)
        #expect(try connection.scalar("SELECT 'usable'") == .text("usable"))
        withExtendedLifetime(open) {}
    }
}
