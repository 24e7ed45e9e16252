import Foundation
import SpoutCore
import SpoutTestDatabases
import SpoutTestSupport
import Testing

@testable import SpoutPostgres

/// Server cursors that read ahead (`QueryOptions(prefetch: true)`): the next `FETCH` is sent as
/// soon as a batch arrives.
@Suite(.serialized)
struct PostgresPrefetchTests {
    @Test(.enabled(if: TestDatabases.postgresEnabled))
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

    @Test(.enabled(if: TestDatabases.postgresEnabled))
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

    /// Closing the cursor while its `FETCH` ahead still runs (each of its rows sleeps) reads
    /// that `FETCH` to its end instead of cancelling it: a cancel would fail the transaction.
    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func closingWhileTheFetchAheadStillRunsKeepsTheTransaction() throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        try connection.begin(readOnly: true)
        let parsed = try ParsedSQL("SELECT g FROM generate_series(1, 1000) g WHERE pg_sleep(0.01) IS NOT NULL", dialect: .postgres)
        let cursor = try connection.query(parsed, [], options: QueryOptions(interleaved: true, batchSize: 10, prefetch: true))
        #expect(try cursor.next())
        cursor.close()
        #expect(connection.isInTransaction)
        #expect(try connection.scalar("SELECT 41 + 1") == .integer(42))
        try connection.commit()
    }
}

/// Batches sized by bytes: after the first `FETCH`, wide rows come in batches of about
/// `PostgresServerCursor.batchBytes`, narrow ones in batches of `batchSize`.
@Suite(.serialized)
struct PostgresBatchSizeTests {
    @Test(.enabled(if: TestDatabases.postgresEnabled), arguments: [false, true])
    func wideRowsComeInSmallerBatches(prefetch: Bool) throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        try connection.begin(readOnly: true)
        // 20,000-byte rows: 500 of them are 10 MB; a batch of 1 MiB holds about 50, so the
        // batches after the first ask for the floor of 100.
        let wide = try ParsedSQL("SELECT g, repeat('x', 20000) AS text FROM generate_series(1, 1200) g", dialect: .postgres)
        let cursor = try #require(
            try connection.query(wide, [], options: QueryOptions(interleaved: true, batchSize: 500, prefetch: prefetch))
                as? PostgresServerCursor)
        var count = 0
        while try cursor.next() {
            count += 1
            if count == 501 { #expect(cursor.nextCount == PostgresServerCursor.minimumBatch) }
        }
        #expect(count == 1200)

        let narrow = try ParsedSQL("SELECT g FROM generate_series(1, 1200) g", dialect: .postgres)
        let narrowCursor = try #require(
            try connection.query(narrow, [], options: QueryOptions(interleaved: true, batchSize: 500, prefetch: prefetch))
                as? PostgresServerCursor)
        var narrowCount = 0
        while try narrowCursor.next() {
            narrowCount += 1
            if narrowCount == 501 { #expect(narrowCursor.nextCount == 500) }
        }
        #expect(narrowCount == 1200)
        try connection.commit()
    }

    /// A `FETCH` that fails — the cursor's first, which the cursor runs before it is returned,
    /// or a later one — throws the database's error; the transaction can be rolled back and
    /// the connection goes on.
    @Test(.enabled(if: TestDatabases.postgresEnabled), arguments: [false, true])
    func aFailingFetchThrowsAndLeavesTheConnectionUsable(prefetch: Bool) throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        let options = QueryOptions(interleaved: true, batchSize: 3, prefetch: prefetch)

        try connection.begin(readOnly: true)
        let failsFirst = try ParsedSQL("SELECT 1 / (g - 1) AS q FROM generate_series(1, 10) g", dialect: .postgres)
        let first = #expect(throws: DatabaseError.self) { _ = try connection.query(failsFirst, [], options: options) }
        #expect(first?.code == .invalidValue)
        try connection.rollback()
        #expect(try connection.scalar("SELECT 'after the first'") == .text("after the first"))

        try connection.begin(readOnly: true)
        let failsLater = try ParsedSQL("SELECT 10 / (g - 5) AS q FROM generate_series(1, 10) g", dialect: .postgres)
        let cursor = try connection.query(failsLater, [], options: options)
        var seen: [Int64] = []
        let later = #expect(throws: DatabaseError.self) {
            while try cursor.next() {
                if case .integer(let value) = cursor.value(at: 0) { seen.append(value) }
            }
        }
        #expect(later?.code == .invalidValue)
        #expect(seen == [-2, -3, -5])
        try connection.rollback()
        #expect(try connection.scalar("SELECT 'after a later one'") == .text("after a later one"))
    }
}
