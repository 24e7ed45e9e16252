import Foundation
import Synchronization
import SpoutCore
import SpoutDrivers
import SpoutTestDatabases
import SpoutTestSupport
import Testing

/// The pool against real databases: replacement of broken connections, exhaustion, cancel.
@Suite struct ConnectionPoolTests {
    static func scalar(_ database: Database, _ sql: String) throws -> String {
        let sink = CollectingSink()
        try database.query(sql).write(as: .json(), shape: .scalar, to: sink)
        return sink.text
    }

    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func terminatedConnectionIsReplaced() throws {
        let temporary = try TestDatabases.makePostgresDatabase()
        defer { temporary.drop() }
        let database = try temporary.open(DatabaseConfiguration(maximumConnections: 1))
        defer { database.close() }
        let pid = try Self.scalar(database, "SELECT pg_backend_pid()")

        let admin = try temporary.open()
        defer { admin.close() }
        #expect(try Self.scalar(admin, "SELECT pg_terminate_backend(\(pid))") == "true")

        // The pool's only connection is dead: the first use finds out and discards it ...
        #expect(throws: DatabaseError.self) { try Self.scalar(database, "SELECT 1") }
        // ... and the next lease opens a new one.
        let newPID = try Self.scalar(database, "SELECT pg_backend_pid()")
        #expect(newPID != pid)
        #expect(try Self.scalar(database, "SELECT 41 + 1") == "42")
    }

    /// Every pooled connection carries the configured statement timeout between leases: a new
    /// one gets it, and a lease that set another finds it restored for the next lease.
    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func poolRestoresItsStatementTimeout() throws {
        let temporary = try TestDatabases.makePostgresDatabase()
        defer { temporary.drop() }
        let database = try temporary.open(DatabaseConfiguration(maximumConnections: 1, statementTimeout: .seconds(30)))
        defer { database.close() }
        #expect(try Self.scalar(database, "SHOW statement_timeout") == #""30s""#)
        let pid = try Self.scalar(database, "SELECT pg_backend_pid()")

        let lease = try database.leaseSoon(readOnly: true)
        try lease.withConnection { connection in
            try connection.setStatementTimeout(milliseconds: 150)
            let error = #expect(throws: DatabaseError.self) {
                try connection.query(try ParsedSQL("SELECT pg_sleep(2)", dialect: .postgres), [], options: QueryOptions()).next()
            }
            #expect(error?.code == .statementTimeout)
        }
        lease.release()

        // The same connection (the pool has one), its timeout back to the default.
        #expect(try Self.scalar(database, "SELECT pg_backend_pid()") == pid)
        #expect(try Self.scalar(database, "SHOW statement_timeout") == #""30s""#)
    }

    @Test func exhaustedPoolAnswersWithinTheTimeout() async throws {
        let temporary = TestDatabases.makeSQLiteDatabase()
        defer { temporary.drop() }
        let database = try temporary.open(DatabaseConfiguration(maximumConnections: 1, acquireTimeout: .milliseconds(200)))
        defer { database.close() }
        let held = try await database.lease(readOnly: false)
        // The wait ends with a distinct error instead of hanging (no timing asserted: shared machines are noisy).
        let error = await #expect(throws: DatabaseError.self) { _ = try await database.lease(readOnly: false) }
        #expect(error?.code == .poolExhausted)
        held.release()
        let next = try await database.lease(readOnly: false)
        next.release()
    }

    @Test func releasedLeaseServesAWaiter() async throws {
        let temporary = TestDatabases.makeSQLiteDatabase()
        defer { temporary.drop() }
        let database = try temporary.open(DatabaseConfiguration(maximumConnections: 1, acquireTimeout: .seconds(30)))
        defer { database.close() }
        let held = try await database.lease(readOnly: false)
        #expect(database.leasesWaiting == 0)
        async let waiter = database.lease(readOnly: false)
        // Release only once the second lease is really waiting: otherwise it would simply find
        // the connection free and the test would prove nothing.
        var waited = false
        for _ in 0..<1_000 where !waited {
            waited = database.leasesWaiting == 1
            if !waited { try await Task.sleep(for: .milliseconds(5)) }
        }
        #expect(waited, "the second lease never waited for the held connection")
        held.release()
        let lease = try await waiter
        try lease.withConnection { try $0.executeScript("CREATE TABLE t (x INTEGER)") }
        lease.release()
        #expect(database.connectionsInUse.write == 1)
    }

    @Test func streamsCannotTakeTheReservedConnections() async throws {
        let temporary = TestDatabases.makeSQLiteDatabase()
        defer { temporary.drop() }
        // Read-only connections: 3, one of them reserved, so streams may hold 2. (How long a
        // stream waits before it gives up is ConnectionPoolClockTests' business, on a fake clock.)
        let database = try temporary.open(
            DatabaseConfiguration(maximumConnections: 3, acquireTimeout: .seconds(30), streamReserve: 1))
        defer { database.close() }
        let first = try await database.lease(readOnly: true, forStream: true)
        let second = try await database.lease(readOnly: true, forStream: true)
        // The free slot is the reserved one: a request answered whole takes it at once.
        let short = try await database.lease(readOnly: true)
        short.release()

        // A waiting stream gets the connection a stream gives back, not one a short request does.
        async let waiter = database.lease(readOnly: true, forStream: true)
        #expect(try await eventually { database.leasesWaiting == 1 }, "the third stream never waited")
        let another = try await database.lease(readOnly: true)
        another.release()
        #expect(database.leasesWaiting == 1, "a short request's connection went to the waiting stream")
        first.release()
        let third = try await waiter
        third.release()
        second.release()
    }

    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func cancelFromAnotherThreadFreesTheConnection() async throws {
        let temporary = try TestDatabases.makePostgresDatabase()
        defer { temporary.drop() }
        let database = try temporary.open(DatabaseConfiguration(maximumConnections: 1))
        defer { database.close() }
        let lease = try await database.lease(readOnly: true)
        let running = Task.detached {
            try lease.withConnection { connection in
                try RowStream("SELECT pg_sleep(60)").write(as: .json(), to: CollectingSink(), on: connection)
            }
        }
        // Cancel once the statement is running.
        let observer = try temporary.open()
        defer { observer.close() }
        for _ in 0..<200 {
            let active = try Self.scalar(observer,
                "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)' AND state = 'active'")
            if active == "1" { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        let cancelled = ContinuousClock.now
        lease.cancel()
        await #expect(throws: DatabaseError.self) { try await running.value }
        lease.release()
        #expect(ContinuousClock.now - cancelled < .seconds(5))
        #expect(try Self.scalar(database, "SELECT 1") == "1", "the connection went back to the pool usable")
    }

    /// Hears the releases of leases.
    final class ReleaseCounter: DatabaseObserver {
        private let count = Mutex(0)
        var releases: Int { self.count.withLock { $0 } }
        func connectionAcquired(database: String, after wait: Duration) {}
        func connectionReleased(database: String, after held: Duration, work: DatabaseWork) { self.count.withLock { $0 += 1 } }
    }

    static var dialects: [SQLDialect] { TestDatabases.postgresEnabled ? [.sqlite, .postgres] : [.sqlite] }

    @Test("runLast gives the lease back on its thread: the pool's one connection is free before the session ends, released once, also when the body throws", arguments: Self.dialects)
    func runLastReleases(_ dialect: SQLDialect) async throws {
        let temporary = dialect == .postgres ? try TestDatabases.makePostgresDatabase() : TestDatabases.makeSQLiteDatabase()
        defer { temporary.drop() }
        let database = try temporary.open(DatabaseConfiguration(maximumConnections: 1, acquireTimeout: .milliseconds(500)))
        defer { database.close() }
        let counter = ReleaseCounter()
        let work = DatabaseWork(readOnly: false, transaction: .always(readOnly: false))
        let sql = try ParsedSQL("SELECT 41 + 1", dialect: dialect)
        try await database.withSession(work, observer: counter) { session in
            let rows = try await session.runLast { connection in try connection.queryAll([BoundStatement(sql, [])]) }
            #expect(rows.first?.rows.first?.first == .integer(42))
            // Without the release, the pool's only connection would be held: this would wait
            // out the acquire timeout and fail.
            let other = try await database.lease(readOnly: false)
            other.release()
            await #expect(throws: DatabaseError.self) { try await session.run { _ in 1 } }
        }
        #expect(counter.releases == 1)

        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await database.withSession(work) { session in try await session.runLast { _ in throw Refused() } }
        }
        let next = try await database.lease(readOnly: false)
        next.release()
        #expect(try Self.scalar(database, "SELECT 1") == "1", "the connection went back to the pool usable")
    }
}
