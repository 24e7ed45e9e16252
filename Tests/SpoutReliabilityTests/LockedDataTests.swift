import SpoutCore
import SpoutDrivers
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// A write that finds its data locked by another transaction or process for longer than the
/// database lets it wait (SQLite's busy timeout; PostgreSQL's `lock_timeout`, which a DBA sets
/// on Spout's role or database) is `503 {"error":"database busy"}` with `Retry-After: 1`,
/// alike on both databases, and nothing is stored; once the lock goes, the same write
/// succeeds. Before, both were a 500 `internal server error`, which tells a client not to
/// retry.
@Suite("Locked data")
struct LockedDataTests {
    static let schema = "CREATE TABLE note (id INT PRIMARY KEY, body VARCHAR(40) NOT NULL)"

    static let endpoints = """
        paths:
          /notes:
            post:
              description: Writes a note.
              sql: INSERT INTO note (id, body) VALUES (:id, :body)
              result: none
              parameters:
                - {name: id, type: integer, required: true}
                - {name: body, type: string, required: true}

        """

    @Test("a write past the wait for a lock is 503 database busy with Retry-After; after the lock, it succeeds", arguments: SQLDialect.allCases)
    func lockedWrite(_ dialect: SQLDialect) async throws {
        guard let database = try TestDatabases.make(dialect, prefix: "spout_rel_locked") else { return }
        defer { database.drop() }
        let holder = try await onThread { () throws -> any DatabaseConnection in
            let connection = try Drivers.driver(for: database.url).connect(readOnly: false, statistics: QueryStatistics())
            try connection.executeScript(Self.schema)
            if dialect == .postgres {
                // The DBA's setting, which Spout's new sessions take.
                try connection.executeScript("DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET lock_timeout = 1000', current_database()); END $$")
            }
            return connection
        }
        defer { holder.close() }
        let directory = try ServiceDirectory(databaseURL: database.url, extraEndpoints: ["notes.yaml": Self.endpoints], shipped: false)
        defer { directory.remove() }
        let service = try await InProcessServer.start(directory)
        func post(_ form: String) async throws -> HTTPTestResponse {
            try await RawHTTP.send(
                port: service.port,
                RawHTTP.request("POST", "/notes", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array(form.utf8)))
        }

        // Another transaction takes the table's write lock and keeps it.
        try await onThread {
            switch dialect {
            case .postgres: try holder.executeScript("BEGIN; LOCK TABLE note IN EXCLUSIVE MODE")
            case .sqlite: try holder.executeScript("BEGIN IMMEDIATE")
            }
        }
        let locked = try await post("id=1&body=first")
        #expect(locked.status == 503, "\(locked.status) \(locked.text)")
        #expect(locked.text == #"{"error":"database busy"}"#)
        #expect(locked.header("Retry-After") == "1")

        try await onThread { try holder.executeScript("ROLLBACK") }
        let retried = try await post("id=1&body=first")
        #expect(retried.status == 204, "\(retried.status) \(retried.text)")
        let count = try await onThread { try SampleData.column(database.url, "SELECT count(*) FROM note") }
        #expect(count == ["1"], "the refused write stored nothing, the retry one row")
        await service.stop()
    }
}
