import SpoutCore
import SpoutTestDatabases
import Testing

@testable import SpoutPostgres

/// Errors of contention, which a retry resolves, are ``SpoutCore/DatabaseError/Code/busy``
/// (HTTP 503 with `Retry-After`): a lock waited for past `lock_timeout`, and a transaction
/// rolled back for another's sake (here a serialization failure, deterministic where a
/// deadlock is not).
@Suite(.serialized)
struct PostgresContentionTests {
    @Test("a serialization failure and a lock past lock_timeout are busy", .enabled(if: TestDatabases.postgresEnabled))
    func contentionIsBusy() throws {
        let database = try TestDatabases.makePostgresDatabase(prefix: "spout_drv_contention")
        defer { database.drop() }
        let driver = try PostgresDriver(url: database.url)
        let first = try #require(try driver.connect(readOnly: false, statistics: QueryStatistics()) as? PostgresConnection)
        defer { first.close() }
        let second = try #require(try driver.connect(readOnly: false, statistics: QueryStatistics()) as? PostgresConnection)
        defer { second.close() }
        try first.executeScript("CREATE TABLE counter (id INT PRIMARY KEY, n INT NOT NULL); INSERT INTO counter VALUES (1, 0)")
        let update = try ParsedSQL("UPDATE counter SET n = n + 1 WHERE id = 1", dialect: .postgres)

        // The first reads in a snapshot, the second changes the row, the first then may not.
        try first.executeScript("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT n FROM counter")
        #expect(try second.execute(update, []) == 1)
        let serialization = #expect(throws: DatabaseError.self) { try first.execute(update, []) }
        #expect(serialization?.code == .busy && serialization?.sqlState == "40001", "\(String(describing: serialization))")
        try first.executeScript("ROLLBACK")

        // The first holds the row; the second waits 100 ms for it and gives up.
        try first.executeScript("BEGIN; SELECT n FROM counter FOR UPDATE")
        try second.executeScript("SET lock_timeout = 100")
        let locked = #expect(throws: DatabaseError.self) { try second.execute(update, []) }
        #expect(locked?.code == .busy && locked?.sqlState == "55P03", "\(String(describing: locked))")
        try first.executeScript("ROLLBACK")
        #expect(try second.execute(update, []) == 1)
    }
}
