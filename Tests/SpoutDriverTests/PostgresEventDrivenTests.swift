import Foundation
import SpoutCore
import SpoutPostgres
import SpoutTestDatabases
import Synchronization
import SpoutTestSupport
import Testing

@testable import SpoutPostgres

/// `runEventDriven` against a real PostgreSQL: batches sent in pipeline mode on a non-blocking
/// socket and read back by the reactor thread, with the connection usable before and after.
@Suite(.serialized, .enabled(if: TestDatabases.postgresEnabled))
struct PostgresEventDrivenTests {
    struct Stop: Error {}

    private static func bound(_ sql: String, _ arguments: [String: SQLValue] = [:]) throws -> BoundStatement {
        let parsed = try ParsedSQL(sql, dialect: .postgres)
        return BoundStatement(parsed, try parsed.bind(arguments))
    }

    /// A fresh connection, read-only outside transactions, as a read lease leaves it.
    private static func readOnlyConnection(statistics: QueryStatistics = QueryStatistics()) throws -> PostgresConnection {
        let connection = try PostgresTestEnvironment.connect(statistics: statistics)
        try connection.setReadOnly(true)
        return connection
    }

    @Test func canRunOnlyWhenNoSetupRoundTripIsNeeded() throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        try connection.setReadOnly(true)
        try connection.setStatementTimeout(milliseconds: 1_500)
        #expect(connection.canRunEventDriven(readOnly: true, statementTimeout: nil))
        #expect(connection.canRunEventDriven(readOnly: true, statementTimeout: 1_500))
        #expect(!connection.canRunEventDriven(readOnly: true, statementTimeout: 2_000))
        #expect(!connection.canRunEventDriven(readOnly: false, statementTimeout: nil))
        try connection.setStatementTimeout(milliseconds: nil)
        #expect(connection.canRunEventDriven(readOnly: true, statementTimeout: 0))
        try connection.begin(readOnly: true)
        #expect(!connection.canRunEventDriven(readOnly: true, statementTimeout: nil), "inside a transaction")
        try connection.rollback()
        let cursor = try connection.query(try ParsedSQL("SELECT generate_series(1, 3)", dialect: .postgres), [], options: QueryOptions())
        #expect(!connection.canRunEventDriven(readOnly: true, statementTimeout: nil), "while a cursor streams")
        cursor.close()
        #expect(connection.canRunEventDriven(readOnly: true, statementTimeout: nil))
    }

    @Test func runsBatchesBuiltFromEarlierResults() async throws {
        let statistics = QueryStatistics()
        let connection = try Self.readOnlyConnection(statistics: statistics)
        defer { connection.close() }
        // Statements nobody prepared yet: they are prepared in the same round trip.
        let tag = UUID().uuidString.prefix(8)
        let first = StatementBatch(
            [try Self.bound("SELECT g AS n, '\(tag)' AS tag FROM generate_series(1, :count::int4) g", ["count": .integer(5)])],
            rowLimit: 2)
        let seen = Mutex<[Int]>([])
        let batches = try await connection.runEventDriven(first, session: nil) { results in
            seen.withLock { $0.append(results.count) }
            guard results.count == 1 else { return StatementBatch([]) }
            let rows = results[0][0].rows
            return StatementBatch([
                try Self.bound("SELECT CAST(:value AS date) AS day", ["value": .text("2000-01-02")]),
                try Self.bound("SELECT :kept::int4 AS kept, 'x' AS \"\(tag)\"", ["kept": .integer(Int64(rows.count))]),
                try Self.bound("SELECT 1 AS one WHERE false"),
            ])
        }
        #expect(seen.withLock { $0 } == [1, 2])
        #expect(batches.count == 2)
        #expect(batches[0].map(\.rows) == [[[.integer(1), .text(String(tag))], [.integer(2), .text(String(tag))]]])
        #expect(batches[0][0].columns.map(\.label) == ["n", "tag"])
        #expect(batches[1].map(\.rows) == [[[.date(days: 10_958)]], [[.integer(2), .text("x")]], []])
        #expect(batches[1][2].columns.map(\.label) == ["one"])
        #expect(statistics.statementCount == 4)
        #expect(statistics.eventDrivenRunCount == 1)

        // The connection is idle, outside any transaction, and works both ways again.
        #expect(connection.isInTransaction == false)
        #expect(connection.canRunEventDriven(readOnly: true, statementTimeout: nil))
        #expect(try connection.scalar("SELECT 41 + 1") == .integer(42))
        let again = try await connection.runEventDriven(first, session: nil) { _ in StatementBatch([]) }
        #expect(again[0][0].rows.count == 2)
        #expect(connection.preparedStatements.count == 5)
    }

    /// The reactor's thread carries its name for `top -H` and `perf` (set through
    /// ``ThreadName``, like the database and compression threads).
    @Test func answersAreReadOnTheNamedReactorThread() async throws {
        let connection = try Self.readOnlyConnection()
        defer { connection.close() }
        let names = Mutex<[String]>([])
        _ = try await connection.runEventDriven(StatementBatch([try Self.bound("SELECT 1 AS one")]), session: nil) { _ in
            let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "unreadable"
            names.withLock { $0.append(name.trimmingCharacters(in: .whitespacesAndNewlines)) }
            return StatementBatch([])
        }
        #expect(names.withLock { $0 } == ["spout-pg-io"])
    }

    @Test func aFailingStatementSkipsTheRestAndLeavesTheConnectionUsable() async throws {
        let connection = try Self.readOnlyConnection()
        defer { connection.close() }
        let batch = StatementBatch([
            try Self.bound("SELECT 1 AS n"),
            try Self.bound("SELECT 1 / :zero::int4 AS n", ["zero": .integer(0)]),
            try Self.bound("SELECT 3 AS n"),
        ])
        let calls = Mutex(0)
        let error = await #expect(throws: DatabaseError.self) {
            try await connection.runEventDriven(batch, session: nil) { _ in
                calls.withLock { $0 += 1 }
                return batch
            }
        }
        #expect(error?.sqlState == "22012")
        #expect(calls.withLock { $0 } == 0, "no next batch after a failure")
        #expect(connection.isBroken == false)
        #expect(connection.isInTransaction == false)
        #expect(try connection.scalar("SELECT 5") == .integer(5))

        // A write on the read-only session fails as on the blocking path.
        let write = await #expect(throws: DatabaseError.self) {
            try await connection.runEventDriven(StatementBatch([try Self.bound("CREATE TEMPORARY TABLE t (x int)")]), session: nil) { _ in
                StatementBatch([])
            }
        }
        #expect(write?.code == .readOnly)
        let ok = try await connection.runEventDriven(StatementBatch([try Self.bound("SELECT 6 AS n")]), session: nil) { _ in StatementBatch([]) }
        #expect(ok[0][0].rows == [[.integer(6)]])
    }

    @Test func tentativeStatementsJoinTheRoundTripOrAreLeftOut() async throws {
        let statistics = QueryStatistics()
        let connection = try Self.readOnlyConnection(statistics: statistics)
        defer { connection.close() }
        let parent = try Self.bound("SELECT g AS n FROM generate_series(1, 3) g")
        // The row limit is the batch's statements' only; tentative results come after theirs.
        let results = try await connection.runEventDriven(StatementBatch(
            [parent], rowLimit: 1,
            tentative: [try Self.bound("SELECT g AS m FROM generate_series(1, 3) g"), try Self.bound("SELECT 'x' AS s")]
        ), session: nil) { _ in StatementBatch([]) }
        #expect(results.map { $0.map(\.rows) } == [[[[.integer(1)]], [[.integer(1)], [.integer(2)], [.integer(3)]], [[.text("x")]]]])
        #expect(statistics.statementCount == 3)

        // A failing tentative statement (or one that cannot be sent) leaves them all out; the
        // run goes on.
        for failing in [
            try Self.bound("SELECT 1 / :zero::int4 AS n", ["zero": .integer(0)]),
            try Self.bound("SELECT :t::text AS t", ["t": .text("a\u{0}b")]),
        ] {
            let seen = Mutex<[Int]>([])
            let batches = try await connection.runEventDriven(StatementBatch(
                [parent], rowLimit: 1, tentative: [try Self.bound("SELECT 2 AS n"), failing, try Self.bound("SELECT 3 AS n")]
            ), session: nil) { results in
                seen.withLock { $0.append(results.last?.count ?? -1) }
                return results.count == 1 ? StatementBatch([try Self.bound("SELECT 4 AS n")]) : StatementBatch([])
            }
            #expect(seen.withLock { $0 } == [1, 1])
            #expect(batches.map { $0.map(\.rows) } == [[[[.integer(1)]]], [[[.integer(4)]]]])
            #expect(connection.canRunEventDriven(readOnly: true, statementTimeout: nil))
        }
        // The batch's own failure fails the run, whatever the tentative statements did.
        let error = await #expect(throws: DatabaseError.self) {
            try await connection.runEventDriven(StatementBatch(
                [try Self.bound("SELECT 1 / :zero::int4 AS n", ["zero": .integer(0)])], tentative: [try Self.bound("SELECT 2 AS n")]
            ), session: nil) { _ in StatementBatch([]) }
        }
        #expect(error?.sqlState == "22012")
        #expect(try connection.scalar("SELECT 5") == .integer(5))
    }

    /// A request's role and claims go in the pipeline, first in each implicit transaction:
    /// every statement of the batch, and tentative ones after a sync point, see them; the next
    /// run, and the connection's blocking calls, do not.
    @Test(arguments: [true, false])
    func sessionsAreSetInEachImplicitTransactionAndEndWithIt(readOnly: Bool) async throws {
        let statistics = QueryStatistics()
        let connection = try PostgresTestEnvironment.connect(statistics: statistics)
        defer { connection.close() }
        try connection.setReadOnly(readOnly)
        let login = try connection.scalar("SELECT CAST(current_user AS text)")
        let claims = #"{"sub":"O'Brien; -- 名前"}"#
        let seen = "SELECT CAST(current_user AS text) AS role, current_setting('request.jwt.claims', true) AS claims"
        let session = RequestSession(role: "pg_read_all_data", claimsJSON: claims)
        let expected: [SQLValue] = [.text("pg_read_all_data"), .text(claims)]
        let before = statistics.statementCount
        let batches = try await connection.runEventDriven(
            StatementBatch([try Self.bound(seen), try Self.bound(seen)], tentative: [try Self.bound(seen)]), session: session
        ) { results in
            results.count == 1 ? StatementBatch([try Self.bound(seen)]) : StatementBatch([])
        }
        #expect(batches.map { $0.map(\.rows) } == [[[expected], [expected], [expected]], [[expected]]])
        #expect(statistics.statementCount - before == 4, "the settings are not the request's statements")

        // The connection's last query was read in single-row mode (a blocking cursor, as a
        // replica's lag check reads), a mode libpq carries into the first query of the next
        // pipeline when that query is already prepared: here the settings statement.
        let previous = try connection.query(try ParsedSQL("SELECT 1 AS one", dialect: .postgres), [], options: QueryOptions())
        #expect(try previous.next())
        previous.close()
        let again = try await connection.runEventDriven(StatementBatch([try Self.bound(seen)], rowLimit: 1), session: session) { _ in
            StatementBatch([])
        }
        #expect(again.map { $0.map(\.rows) } == [[[expected]]])

        // Nothing outlives the run: not into the next run, not into a blocking call.
        let after = try await connection.runEventDriven(StatementBatch([try Self.bound(seen)]), session: nil) { _ in StatementBatch([]) }
        let cleared = after[0][0].rows[0]
        #expect(cleared[0] == login)
        #expect(cleared[1] == .null || cleared[1] == .text(""))
        #expect(try connection.scalar("SELECT CAST(current_user AS text)") == login)

        // A role the login may not take fails the run, with PostgreSQL's error; the connection
        // stays usable and its own.
        let refused = await #expect(throws: DatabaseError.self) {
            try await connection.runEventDriven(
                StatementBatch([try Self.bound(seen)]), session: RequestSession(role: "spout_no_such_role", claimsJSON: "{}")
            ) { _ in StatementBatch([]) }
        }
        #expect(refused?.sqlState == "22023")
        #expect(connection.canRunEventDriven(readOnly: readOnly, statementTimeout: nil))
        #expect(try connection.scalar("SELECT CAST(current_user AS text)") == login)
    }

    /// On a read-write session a failing tentative statement must not roll back what the
    /// batch's statements wrote: they end in an implicit transaction of their own.
    @Test func aFailingTentativeStatementKeepsTheBatchsWrites() async throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        try connection.setReadOnly(false)
        let table = "tentative_\(UUID().uuidString.prefix(8).lowercased())"
        _ = try await connection.runEventDriven(StatementBatch([try Self.bound("CREATE TEMPORARY TABLE \(table) (x int)")]), session: nil) { _ in
            StatementBatch([])
        }
        let results = try await connection.runEventDriven(StatementBatch(
            [try Self.bound("INSERT INTO \(table) VALUES (:x::int4) RETURNING x", ["x": .integer(7)])],
            tentative: [try Self.bound("SELECT 1 / count(*)::int4 AS n FROM \(table) WHERE x = 0")]
        ), session: nil) { _ in StatementBatch([]) }
        #expect(results.map { $0.map(\.rows) } == [[[[.integer(7)]]]])
        #expect(try connection.scalar("SELECT count(*) FROM \(table)") == .integer(1))
    }

    @Test func anErrorFromNextEndsTheRun() async throws {
        let connection = try Self.readOnlyConnection()
        defer { connection.close() }
        await #expect(throws: Stop.self) {
            try await connection.runEventDriven(StatementBatch([try Self.bound("SELECT 1 AS n")]), session: nil) { _ in throw Stop() }
        }
        // A parameter the driver cannot send (text with NUL) fails before anything of it is sent.
        let invalid = await #expect(throws: DatabaseError.self) {
            try await connection.runEventDriven(StatementBatch([
                try Self.bound("SELECT 1 AS n"), try Self.bound("SELECT :t::text AS t", ["t": .text("a\u{0}b")]),
            ]), session: nil) { _ in StatementBatch([]) }
        }
        #expect(invalid?.code == .invalidValue)
        #expect(connection.canRunEventDriven(readOnly: true, statementTimeout: nil))
        #expect(try connection.scalar("SELECT 7") == .integer(7))
        #expect(try await connection.runEventDriven(StatementBatch([]), session: nil) { _ in StatementBatch([]) }.isEmpty)
        #expect(connection.canRunEventDriven(readOnly: true, statementTimeout: nil), "an empty run leaves the connection idle")
        #expect(connection.reset())
    }

    @Test func rowLimitKeepsTheFirstRowsOfALargeResult() async throws {
        let connection = try Self.readOnlyConnection()
        defer { connection.close() }
        let batch = StatementBatch([try Self.bound("SELECT g AS n FROM generate_series(1, 200000) g")], rowLimit: 1)
        let results = try await connection.runEventDriven(batch, session: nil) { _ in StatementBatch([]) }
        #expect(results[0][0].rows == [[.integer(1)]])
        #expect(try connection.scalar("SELECT 8") == .integer(8))
    }

    @Test func cancelStopsARunningStatement() async throws {
        let connection = try Self.readOnlyConnection()
        defer { connection.close() }
        let pid = try connection.scalar("SELECT pg_backend_pid()")
        let observer = try PostgresTestEnvironment.connect()
        defer { observer.close() }
        let started = ContinuousClock.now
        // Cancel once the server shows the statement running, not after a guessed delay.
        let canceller = Task.detached {
            var running = false
            for _ in 0..<2_000 where !running {
                let active = try observer.rows(
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = :pid::int4 AND state = 'active' AND query LIKE '%pg_sleep(20)%'",
                    ["pid": pid])
                running = active.first?.first == .integer(1)
                if !running { try await Task.sleep(for: .milliseconds(5)) }
            }
            connection.cancel()
            return running
        }
        let error = await #expect(throws: DatabaseError.self) {
            try await connection.runEventDriven(StatementBatch([try Self.bound("SELECT pg_sleep(20) AS slept")]), session: nil) { _ in
                StatementBatch([])
            }
        }
        #expect(try await canceller.value, "the statement never showed as active in pg_stat_activity")
        #expect(error?.code == .cancelled)
        #expect(ContinuousClock.now - started < .seconds(15))
        #expect(connection.isBroken == false)
        #expect(connection.reset())
        #expect(try connection.scalar("SELECT 9") == .integer(9))
    }

    @Test func aTerminatedBackendFailsTheRunAsConnectionLost() async throws {
        let connection = try Self.readOnlyConnection()
        defer { connection.close() }
        let killer = try PostgresTestEnvironment.connect()
        defer { killer.close() }
        let pid = try connection.scalar("SELECT pg_backend_pid()")
        _ = try killer.rows("SELECT pg_terminate_backend(:pid::int4)", ["pid": pid])
        let error = await #expect(throws: DatabaseError.self) {
            try await connection.runEventDriven(StatementBatch([try Self.bound("SELECT 1 AS n")]), session: nil) { _ in StatementBatch([]) }
        }
        #expect(error?.code == .connectionLost)
        #expect(connection.isBroken)
        #expect(connection.reset() == false)
    }
}
