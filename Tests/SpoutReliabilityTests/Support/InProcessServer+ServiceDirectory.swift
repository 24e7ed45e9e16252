import Logging
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport

extension InProcessServer {
    /// The service of `directory` in the test process, wired as `spout serve` wires it
    /// (``start(configuration:environment:logger:)``), with ``TestTokens/secret`` as the token
    /// secret.
    static func start(_ directory: ServiceDirectory, logger: Logger = quietLogger) async throws -> InProcessServer {
        try await self.start(
            configuration: try directory.configuration(), environment: ["SPOUT_JWT_SECRET": TestTokens.secret], logger: logger)
    }
}

extension InProcessServer {
    /// A fresh SQLite database seeded with 10 employees and the pets, served in the test process
    /// by the shipped endpoints (``ServiceDirectory``) while `body` runs, then stopped and
    /// dropped. `body` gets the server and the database (to read it before and after).
    static func withSeededSQLite<T>(_ body: (InProcessServer, TemporaryDatabase) async throws -> T) async throws -> T {
        let database = TestDatabases.makeSQLiteDatabase()
        defer { database.drop() }
        try await onThread { try SampleData.seed(database.url, employees: 10) }
        let directory = try ServiceDirectory(databaseURL: database.url)
        defer { directory.remove() }
        let service = try await InProcessServer.start(directory)
        do {
            let result = try await body(service, database)
            await service.stop()
            return result
        } catch {
            await service.stop()
            throw error
        }
    }
}

/// A logger that drops everything (the access log of thousands of requests is noise here).
let quietLogger = Logger(label: "spout.reliability", factory: { _ in SwiftLogNoOpLogHandler() })
