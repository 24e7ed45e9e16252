import Foundation
import SpoutCore
import SpoutDrivers
import SpoutTestDatabases
import SpoutTestSupport
import Testing

/// `spout serve` on a service of one's own: the sample data and the shipped example's hints
/// stay out of it (docs/configuration.md, "Sample data"), on both databases, as a process.
@Suite("A service of one's own starts clean")
struct OwnServiceStartTests {
    /// A service folder with its own configuration, endpoint file and SQL directory (no
    /// sample-data scripts), and nothing said about `database.seed`.
    static func ownService(databaseURL: String) throws -> TemporaryDirectory {
        let service = try TemporaryDirectory()
        try service.write("config/spout.yaml", "database:\n  url: \"\(databaseURL)\"\nendpoints: [api/*.yaml]\nsqlDirectory: ../queries\n")
        try service.write("config/api/library.yaml", """
            description: A small library.
            paths:
              /answer:
                get:
                  sqlFile: answer.sql
                  result: scalar
            """)
        try service.write("queries/answer.sql", "SELECT 6 * 7 AS answer\n")
        return service
    }

    /// The number of tables in the SQLite database at `url`.
    /// The tables of the SQLite database at `url` other than Spout's own.
    static func sqliteTableCount(_ url: String) throws -> Int64 {
        let connection = try Drivers.driver(for: url).connect(readOnly: true, statistics: QueryStatistics())
        defer { connection.close() }
        let cursor = try connection.query(
            // Spout's own tables (the shared cursor keys, `spout_…`) are not sample data.
            try ParsedSQL("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'spout\\_%' ESCAPE '\\'", dialect: .sqlite), [],
            options: QueryOptions())
        defer { cursor.close() }
        guard try cursor.next(), case .integer(let count) = cursor.value(at: 0) else { return -1 }
        return count
    }

    @Test(
        "a new database of one's own is not seeded, and the start suggests the service's own document",
        arguments: SQLDialect.allCases)
    func ownServiceStartsClean(_ dialect: SQLDialect) async throws {
        guard let database = try TestDatabases.make(dialect, prefix: "spout_t_own") else { return }
        defer { database.drop() }
        // SQLite: database.url names a file that does not exist yet, as a mistyped path does.
        let service = try Self.ownService(databaseURL: database.url)
        let server = try await ServerProcess.start(arguments: ["--config", service.path + "/config/spout.yaml"])
        do {
            let answer = try await server.get("/answer")
            #expect(answer.status == 200 && answer.text == "42", "\(answer.status) \(answer.text)")
            let log = server.log
            #expect(!log.contains("seeding"), "\(log)")
            #expect(!log.contains("employees/10004"), "\(log)")
            #expect(log.contains("curl 'http://127.0.0.1:\(server.port)/openapi.json'"), "\(log)")
            if dialect == .sqlite {
                let path = String(database.url.dropFirst("sqlite:".count))
                #expect(log.contains("created \(path), an empty SQLite database"), "\(log)")
                let tables = try Self.sqliteTableCount(database.url)
                #expect(FileManager.default.fileExists(atPath: path) && tables == 0, "\(tables) tables")
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test("the shipped example still suggests its detail request", arguments: SQLDialect.allCases)
    func shippedExampleKeepsItsHint(_ dialect: SQLDialect) async throws {
        guard let database = try TestDatabases.make(dialect, prefix: "spout_t_own") else { return }
        defer { database.drop() }
        // The shipped SQL prepares only where its tables are (the start checks it).
        _ = try await onThread { try SampleData.fixture.load(into: database) }
        let server = try await ServerProcess.start(
            arguments: ["--config", Repository.configFile, "--database", database.url, "--no-seed"])
        let log = server.log
        await server.stop()
        #expect(log.contains("curl 'http://127.0.0.1:\(server.port)/employees/10004?details=titles'"), "\(log)")
    }
}
