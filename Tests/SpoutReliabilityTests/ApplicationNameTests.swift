import Foundation
import SpoutCore
import SpoutTestDatabases
import SpoutTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Spout's PostgreSQL connections name themselves (`application_name`), as the server itself
/// reports them in `pg_stat_activity`: a DBA can tell Spout's sessions, and which instance
/// holds them, from anything else's. Each test asks Spout which backend answered
/// (`pg_backend_pid()` through an endpoint) and looks that backend up from a connection of
/// its own.
@Suite("PostgreSQL application_name", .serialized)
struct ApplicationNameTests {
    static let endpoints = """
        paths:
          /backend:
            get:
              description: The PostgreSQL server process of the connection that answers.
              sql: SELECT pg_backend_pid() AS pid
              result: object

        """

    @Test("by default every connection is spout@HOST/PID of the serving process", .enabled(if: TestDatabases.postgresEnabled))
    func defaultNameIsHostAndProcess() async throws {
        try await Self.withService(prefix: "spout_rel_appname_default", environment: [:]) { service, names in
            var host = [CChar](repeating: 0, count: 256)
            try #require(gethostname(&host, host.count - 1) == 0)
            let hostName = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let expected = String(("spout@" + hostName).prefix(63 - "/\(service.pid)".count)) + "/\(service.pid)"
            let found = try await names()
            #expect(found == [expected])
        }
    }

    @Test("database.applicationName names every pooled connection", .enabled(if: TestDatabases.postgresEnabled))
    func configuredName() async throws {
        let name = "orders-api blue \(UInt16.random(in: .min ... .max))"
        try await Self.withService(prefix: "spout_rel_appname_set", environment: ["SPOUT_DATABASE_APPLICATION_NAME": name]) { _, names in
            let found = try await names()
            #expect(found == [name])
        }
    }

    @Test("an application_name in the URL wins over the setting", .enabled(if: TestDatabases.postgresEnabled))
    func urlNameWins() async throws {
        try await Self.withService(
            prefix: "spout_rel_appname_url", environment: ["SPOUT_DATABASE_APPLICATION_NAME": "from-setting"],
            urlParameters: "application_name=from-url"
        ) { _, names in
            let found = try await names()
            #expect(found == ["from-url"])
        }
    }

    @Test("behind PgBouncer in transaction mode the server connection carries the name",
          .enabled(if: ThrowawayPostgres.isAvailable && ThrowawayPgBouncer.isAvailable))
    func behindPgBouncer() async throws {
        let cluster = try await onThread { try ThrowawayPostgres.create() }
        defer { cluster.remove() }
        let bouncer = try await onThread { try ThrowawayPgBouncer.start(in: cluster, serverConnections: 2) }
        defer { bouncer.remove() }
        try await onThread { try cluster.psql("CREATE DATABASE names") }
        let directory = try ServiceDirectory(
            databaseURL: bouncer.url(database: "names"), extraEndpoints: ["backend.yaml": Self.endpoints], shipped: false, poolSize: 2)
        defer { directory.remove() }
        let service = try await ServerProcess.serving(
            arguments: ["--config", directory.configFile, "--no-seed"],
            environment: ["SPOUT_DATABASE_PREPARED_STATEMENTS": "false", "SPOUT_DATABASE_APPLICATION_NAME": "spout-behind-bouncer"])
        // The backend that answered is one of PgBouncer's server connections; straight to
        // PostgreSQL, it shows the name Spout gave PgBouncer.
        let direct = "postgresql://spout@127.0.0.1:\(cluster.port)/names"
        do {
            for _ in 0..<3 {
                let pid = try await Self.backend(service)
                let name = try await onThread { try SampleData.column(direct, "SELECT application_name FROM pg_stat_activity WHERE pid = \(pid)") }
                #expect(name == ["spout-behind-bouncer"])
            }
        } catch {
            await service.stop()
            throw error
        }
        #expect(service.isRunning)
        await service.stop()
    }

    // MARK: Helpers

    /// Serves ``endpoints`` from a new database (with `urlParameters` added to its URL) and runs
    /// `body` with the service and a function that reads the `application_name` of every
    /// backend that answered Spout's requests so far (after two more requests), deduplicated.
    static func withService(
        prefix: String, environment: [String: String], urlParameters: String? = nil,
        _ body: (ServerProcess, _ names: @escaping @Sendable () async throws -> [String]) async throws -> Void
    ) async throws {
        let database = try TestDatabases.makePostgresDatabase(prefix: prefix)
        defer { database.drop() }
        var url = database.url
        if let urlParameters { url += (url.contains("?") ? "&" : "?") + urlParameters }
        let directory = try ServiceDirectory(
            databaseURL: url, extraEndpoints: ["backend.yaml": Self.endpoints], shipped: false, poolSize: 2)
        defer { directory.remove() }
        let service = try await ServerProcess.serving(arguments: ["--config", directory.configFile, "--no-seed"], environment: environment)
        let names: @Sendable () async throws -> [String] = {
            var pids: Set<Int> = []
            for _ in 0..<2 { pids.insert(try await Self.backend(service)) }
            let list = pids.sorted().map(String.init).joined(separator: ", ")
            let found = try await onThread {
                try SampleData.column(database.url, "SELECT DISTINCT application_name FROM pg_stat_activity WHERE pid IN (\(list))")
            }
            #expect(!found.isEmpty, "no pg_stat_activity row for Spout's backends \(list)")
            return found
        }
        do {
            try await body(service, names)
        } catch {
            await service.stop()
            throw error
        }
        #expect(service.isRunning)
        await service.stop()
    }

    /// The PostgreSQL process id of the connection that answered `GET /backend`.
    static func backend(_ service: ServerProcess) async throws -> Int {
        let response = try await service.get("/backend")
        try #require(response.status == 200, "\(response.status) \(response.text)")
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return try #require(object?["pid"] as? Int, "\(response.text)")
    }
}
