import Foundation
import SpoutCore
import SpoutDrivers

/// The databases integration tests run against.
///
/// PostgreSQL comes from `SPOUT_TEST_POSTGRES_URL` (scripts/test starts a throwaway cluster and
/// sets it). Without it, PostgreSQL tests are skipped, except under `CI=true` or
/// `SPOUT_REQUIRE_POSTGRES=1`, where ``postgresEnabled`` stays true and `requirePostgresURL()`
/// fails the test. Each test gets a fresh database of its own.
public enum TestDatabases {
    /// The administrative URL of the test server, if any.
    public static var postgresURL: String? {
        let value = ProcessInfo.processInfo.environment["SPOUT_TEST_POSTGRES_URL"]
        return value?.isEmpty == false ? value : nil
    }

    /// Whether PostgreSQL tests must run (and fail without a server).
    public static var postgresRequired: Bool {
        let environment = ProcessInfo.processInfo.environment
        return environment["CI"] == "true" || environment["SPOUT_REQUIRE_POSTGRES"] == "1"
    }

    /// Use as `@Test(.enabled(if: TestDatabases.postgresEnabled))`.
    public static var postgresEnabled: Bool { postgresURL != nil || postgresRequired }

    public struct MissingServer: Error, CustomStringConvertible {
        public var description: String {
            "no PostgreSQL server for tests: run scripts/test, or set SPOUT_TEST_POSTGRES_URL"
        }
    }

    /// The server URL, or an error (which fails the test) when there is none.
    public static func requirePostgresURL() throws -> String {
        guard let url = self.postgresURL else { throw MissingServer() }
        return url
    }

    /// Creates an empty PostgreSQL database for one test and returns its URL. `options` follow
    /// `CREATE DATABASE name` (`ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0`).
    public static func makePostgresDatabase(prefix: String = "spout_t", options: String = "") throws -> TemporaryDatabase {
        let adminURL = try self.requirePostgresURL()
        let name = "\(prefix)_\(UInt32.random(in: .min ... .max))_\(ProcessInfo.processInfo.processIdentifier)"
        let admin = try Drivers.driver(for: adminURL).connect(readOnly: false, statistics: QueryStatistics())
        defer { admin.close() }
        try admin.executeScript("CREATE DATABASE \"\(name)\" \(options)")
        let url = replacingDatabaseName(in: adminURL, with: name)
        return TemporaryDatabase(url: url) {
            // DROP DATABASE waits until every backend of the server has absorbed a signal
            // barrier, and a backend blocked writing to a slow client (another test's
            // backpressure) absorbs it only once that client reads. Waiting for it here, on a
            // thread of the tests' shared cooperative pool, could starve the very test whose
            // client must read: drop on a thread of its own, and wait a bounded time.
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                defer { done.signal() }
                guard let admin = try? Drivers.driver(for: adminURL).connect(readOnly: false, statistics: QueryStatistics()) else { return }
                defer { admin.close() }
                try? admin.executeScript("DROP DATABASE IF EXISTS \"\(name)\" WITH (FORCE)")
            }
            _ = done.wait(timeout: .now() + .seconds(5))
        }
    }

    /// An empty database of `dialect` for one test, or nil when it is PostgreSQL and no server
    /// is there (outside CI: the test then ends early; under `CI=true` it fails instead, as
    /// ``makePostgresDatabase(prefix:)`` throws ``MissingServer``). SQLite is always there.
    public static func make(_ dialect: SQLDialect, prefix: String = "spout_t") throws -> TemporaryDatabase? {
        switch dialect {
        case .postgres:
            guard self.postgresEnabled else { return nil }
            return try self.makePostgresDatabase(prefix: prefix)
        case .sqlite:
            return self.makeSQLiteDatabase()
        }
    }

    /// A new SQLite file in a temporary directory (removed with the returned value's `drop`).
    public static func makeSQLiteDatabase() -> TemporaryDatabase {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-test-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return TemporaryDatabase(url: "sqlite:" + directory.appendingPathComponent("test.sqlite").path) {
            try? FileManager.default.removeItem(at: directory)
        }
    }

    static func replacingDatabaseName(in url: String, with name: String) -> String {
        guard var components = URLComponents(string: url) else { return url }
        components.path = "/" + name
        return components.string ?? url
    }
}

/// A database made for one test. Call ``drop()`` when done (a `defer` right after creation).
public final class TemporaryDatabase: Sendable {
    public let url: String
    private let dropAction: @Sendable () -> Void

    init(url: String, drop: @escaping @Sendable () -> Void) {
        self.url = url
        self.dropAction = drop
    }

    /// Opens a pooled ``Database`` on this database.
    public func open(_ configuration: DatabaseConfiguration = DatabaseConfiguration()) throws -> Database {
        Database(driver: try Drivers.driver(for: self.url), configuration: configuration)
    }

    public func drop() { self.dropAction() }
}
