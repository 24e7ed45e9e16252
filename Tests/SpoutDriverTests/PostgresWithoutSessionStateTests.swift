import Foundation
import SpoutCore
import SpoutTestDatabases
import SpoutTestSupport
import Testing

@testable import SpoutPostgres

/// A connection without session state (`preparedStatements: false`, for transaction poolers):
/// nothing it relies on outlives a transaction.
@Suite(.serialized)
struct PostgresWithoutSessionStateTests {
    private static func connect() throws -> PostgresConnection {
        let url = try TestDatabases.requirePostgresURL()
        let connection = try PostgresDriver(url: url, preparedStatements: false).connect(readOnly: false, statistics: QueryStatistics())
        return try #require(connection as? PostgresConnection)
    }

    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func noNamedStatementsAndSettingsOnlyPerTransaction() throws {
        let connection = try Self.connect()
        defer { connection.close() }
        try connection.setReadOnly(true)
        try connection.setStatementTimeout(milliseconds: 1_234)

        // A statement outside a transaction runs in one the connection opens, with the
        // settings LOCAL to it, and the values the decoding needs.
        #expect(try connection.scalar("SELECT current_setting('statement_timeout')") == .text("1234ms"))
        #expect(try connection.scalar("SELECT current_setting('transaction_read_only')") == .text("on"))
        #expect(try connection.scalar("SELECT current_setting('IntervalStyle')") == .text("iso_8601"))
        #expect(try connection.scalar("SELECT interval '1 day 2 hours'") == .text("P1DT2H"))
        #expect(try connection.scalar("SELECT count(*) FROM pg_prepared_statements") == .integer(0))
        #expect(connection.isInTransaction)
        // Read-only: a write fails.
        let write = #expect(throws: DatabaseError.self) { try connection.execute(try ParsedSQL("CREATE TEMP TABLE t(x int)", dialect: .postgres), []) }
        #expect(write?.sqlState == "25006")

        // Released: the implicit transaction ends, and the session keeps none of the settings.
        #expect(connection.reset())
        #expect(!connection.isInTransaction)
        try connection.setReadOnly(false)
        try connection.runCommand("RESET ALL")  // as a pooler's next client would find it
        try connection.begin(readOnly: false)
        try connection.setStatementTimeout(milliseconds: 50)
        let timedOut = #expect(throws: DatabaseError.self) { try connection.scalar("SELECT pg_sleep(2) IS NULL") }
        #expect(timedOut?.code == .statementTimeout)
        try connection.rollback()
        #expect(try connection.scalar("SELECT current_setting('transaction_read_only')") == .text("off"))
        #expect(try connection.scalar("SELECT current_setting('statement_timeout')") == .text("50ms"))
        #expect(connection.reset())
    }

    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func writesOutsideAnExplicitTransactionAreCommittedOnRelease() throws {
        let connection = try Self.connect()
        defer { connection.close() }
        let table = "spout_nosession_\(UInt32.random(in: 0...UInt32.max))"
        try connection.executeScript("CREATE TABLE \(table)(x int)")
        defer { try? connection.executeScript("DROP TABLE \(table)") }
        try connection.execute(try ParsedSQL("INSERT INTO \(table) VALUES (1)", dialect: .postgres), [])
        #expect(connection.reset())
        let other = try Self.connect()
        defer { other.close() }
        #expect(try other.scalar("SELECT count(*) FROM \(table)") == .integer(1))
    }
}
