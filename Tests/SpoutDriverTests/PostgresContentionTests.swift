import SpoutCore
import SpoutTestDatabases
import Testing

@testable import SpoutPostgres

/// Errors of contention, which a retry resolves (HTTP 503 with `Retry-After`): a lock waited
/// for past `lock_timeout` is ``SpoutCore/DatabaseError/Code/busy``, a snapshot's write of a
/// row changed since is ``SpoutCore/DatabaseError/Code/serializationFailure``.
@Suite(.serialized)
struct PostgresContentionTests {
    @Test("a serialization failure is its own code; a lock past lock_timeout is busy", .enabled(if: TestDatabases.postgresEnabled))
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
        #expect(serialization?.code == .serializationFailure && serialization?.sqlState == "40001", "\(String(describing: serialization))")
        try first.executeScript("ROLLBACK")

        // The first holds the row; the second waits 100 ms for it and gives up.
        try first.executeScript("BEGIN; SELECT n FROM counter FOR UPDATE")
        try second.executeScript("SET lock_timeout = 100")
        let locked = #expect(throws: DatabaseError.self) { try second.execute(update, []) }
        #expect(locked?.code == .busy && locked?.sqlState == "55P03", "\(String(describing: locked))")
        try first.executeScript("ROLLBACK")
        #expect(try second.execute(update, []) == 1)
    }

    @Test(
        "a snapshot transaction, with or without a session or session state, cannot write a row changed after its first read",
        .enabled(if: TestDatabases.postgresEnabled), arguments: [false, true], [true, false])
    func snapshotTransaction(withSession: Bool, preparedStatements: Bool) throws {
        let database = try TestDatabases.makePostgresDatabase(prefix: "spout_drv_snapshot")
        defer { database.drop() }
        let first = try PostgresDriver(url: database.url, preparedStatements: preparedStatements).connect(readOnly: false, statistics: QueryStatistics())
        defer { first.close() }
        // The other writer commits each statement (without session state it would hold an
        // implicit transaction, and its lock, until its lease ended).
        let second = try PostgresDriver(url: database.url).connect(readOnly: false, statistics: QueryStatistics())
        defer { second.close() }
        try first.executeScript("CREATE TABLE counter (id INT PRIMARY KEY, n INT NOT NULL); INSERT INTO counter VALUES (1, 0)")
        let read = try ParsedSQL("SELECT n FROM counter WHERE id = 1", dialect: .postgres)
        let update = try ParsedSQL("UPDATE counter SET n = n + 1 WHERE id = 1", dialect: .postgres)
        let session = withSession ? RequestSession(role: nil, claimsJSON: "{}") : nil

        let failure = #expect(throws: DatabaseError.self) {
            try first.runRequest(statementTimeout: .seconds(5), transaction: .snapshot, session: session) {
                let isolation = try ParsedSQL("SELECT current_setting('transaction_isolation')", dialect: .postgres)
                #expect(try first.queryAll([BoundStatement(isolation, [])]).first?.rows.first?.first == .text("repeatable read"))
                _ = try first.queryAll([BoundStatement(read, [])])
                #expect(try second.execute(update, []) == 1)
                try first.execute(update, [])
            }
        }
        #expect(failure?.code == .serializationFailure, "\(String(describing: failure))")
        #expect(!first.isInTransaction)
        // The same at the default level (READ COMMITTED) writes over the change.
        try first.runRequest(statementTimeout: nil, transaction: .always(readOnly: false), session: session) {
            _ = try first.queryAll([BoundStatement(read, [])])
            #expect(try second.execute(update, []) == 1)
            #expect(try first.execute(update, []) == 1)
        }
        let count = try first.queryAll([BoundStatement(read, [])]).first?.rows.first?.first
        #expect(count == .integer(3))
    }
}
