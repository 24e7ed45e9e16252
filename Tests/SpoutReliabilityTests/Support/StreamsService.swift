import Foundation
import SpoutCore
import SpoutTestDatabases
import SpoutTestSupport
import Testing

/// A `spout serve` child process over a new, empty database of one dialect, serving
/// ``TestEndpoints/streams(_:)`` and the given extra endpoint files.
enum StreamsService {
    /// Runs `body` with the service, then stops it and checks it was still running (a crash is
    /// a failure). On PostgreSQL, without a test server this returns without running `body`
    /// (``TestDatabases/postgresEnabled`` fails the test under CI instead).
    static func with(
        _ dialect: SQLDialect,
        prefix: String,
        extraEndpoints: [String: String],
        poolSize: Int,
        acquireTimeoutMs: Int = 2_000,
        statementTimeoutMs: Int,
        environment: [String: String] = [:],
        _ body: (ServerProcess) async throws -> Void
    ) async throws {
        let database: TemporaryDatabase
        switch dialect {
        case .postgres:
            guard TestDatabases.postgresEnabled else { return }
            database = try TestDatabases.makePostgresDatabase(prefix: prefix)
        case .sqlite:
            database = TestDatabases.makeSQLiteDatabase()
            try await onThread { _ = try SampleData.column(database.url, "SELECT 1") }
        }
        defer { database.drop() }
        var endpoints = extraEndpoints
        endpoints["streams.yaml"] = TestEndpoints.streams(dialect)
        let directory = try ServiceDirectory(
            databaseURL: database.url, extraEndpoints: endpoints, shipped: false, poolSize: poolSize,
            acquireTimeoutMs: acquireTimeoutMs, statementTimeoutMs: statementTimeoutMs)
        defer { directory.remove() }
        let service = try await ServerProcess.serving(arguments: ["--config", directory.configFile, "--no-seed"], environment: environment)
        do {
            try await body(service)
        } catch {
            await service.stop()
            throw error
        }
        #expect(service.isRunning)
        await service.stop()
    }
}
