import Foundation
import SpoutCore
import SpoutData
import SpoutDrivers
import SpoutEndpoints
import SpoutTestSupport

/// Paths of the repository (the shipped configuration and SQL).
enum RepositoryPaths {
    static var root: String { TestFixtures.repositoryRoot.path }
    static var shippedEndpoints: String { self.root + "/config/endpoints/*.yaml" }
    static var sqlDirectory: String { self.root + "/sql" }
}

/// A temporary service directory: a `spout.yaml` and extra endpoint files, removed by
/// ``remove()``.
///
/// The configuration serves the shipped endpoints (employees and pets, SQL from the repository's
/// `sql/`) plus the extra endpoint files, whose SQL is inline (`sql:`).
final class ServiceDirectory: Sendable {
    let path: String

    /// - Parameters:
    ///   - databaseURL: `database.url`.
    ///   - extraEndpoints: YAML endpoint files (`paths:` …) to add, by file name.
    ///   - shipped: whether to include the shipped employees and pets endpoints.
    ///   - settings: extra YAML lines under `database:` / `server.limits:` (see the parameters).
    init(
        databaseURL: String, extraEndpoints: [String: String] = [:], shipped: Bool = true,
        poolSize: Int = 4, acquireTimeoutMs: Int = 2_000, statementTimeoutMs: Int = 30_000, drainTimeoutSeconds: Int = 10,
        sharedReaders: Int = 2
    ) throws {
        self.path = FileManager.default.temporaryDirectory.appendingPathComponent("spout-reliability-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: self.path, withIntermediateDirectories: true)
        var patterns: [String] = shipped ? [RepositoryPaths.shippedEndpoints] : []
        for (name, text) in extraEndpoints {
            let file = (self.path as NSString).appendingPathComponent(name)
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            patterns.append(file)
        }
        let yaml = """
            server:
              host: 127.0.0.1
              port: 0
              limits:
                drainTimeoutSeconds: \(drainTimeoutSeconds)
            database:
              url: "\(databaseURL)"
              poolSize: \(poolSize)
              acquireTimeoutMs: \(acquireTimeoutMs)
              statementTimeoutMs: \(statementTimeoutMs)
              sharedReaders: \(sharedReaders)
              seed:
                enabled: false
            endpoints:
            \(patterns.map { "  - \"\($0)\"" }.joined(separator: "\n"))
            sqlDirectory: "\(RepositoryPaths.sqlDirectory)"

            """
        try yaml.write(toFile: self.configFile, atomically: true, encoding: .utf8)
    }

    var configFile: String { (self.path as NSString).appendingPathComponent("spout.yaml") }

    /// The configuration, read as `spout serve --config` would (no environment overrides).
    func configuration() throws -> SpoutConfiguration {
        try SpoutConfiguration.load(file: self.configFile, environment: [:])
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: self.path)
    }
}

/// Sample data for the tests.
enum SampleData {
    /// Seeds `employees` generated employees (with their departments, titles and salaries) and
    /// the 9 pets into the empty database at `url`.
    static func seed(_ url: String, employees: Int) throws {
        let connection = try Drivers.driver(for: url).connect(readOnly: false, statistics: QueryStatistics())
        defer { connection.close() }
        try SQLiteSeeder.seedIfMissing(connection: connection, sqlDirectory: RepositoryPaths.sqlDirectory, employees: employees)
    }

    /// Runs `sql` on a connection of its own and returns the first column of each row as text.
    static func column(_ url: String, _ sql: String) throws -> [String] {
        let connection = try Drivers.driver(for: url).connect(readOnly: false, statistics: QueryStatistics())
        defer { connection.close() }
        let cursor = try connection.query(try ParsedSQL(sql, dialect: connection.dialect), [], options: QueryOptions())
        defer { cursor.close() }
        var values: [String] = []
        while try cursor.next() {
            values.append(Self.text(cursor.value(at: 0)))
        }
        return values
    }

    static func text(_ value: SQLValue) -> String {
        switch value {
        case .null: return "NULL"
        case .integer(let value): return String(value)
        case .double(let value): return String(value)
        case .decimal(let text), .text(let text), .time(let text), .json(let text): return text
        case .bool(let value): return String(value)
        case .date(let days): return CivilTime.formatDate(days: days)
        case .timestamp(let microseconds): return CivilTime.formatTimestamp(microseconds: microseconds)
        case .bytes(let bytes): return bytes.map { String($0, radix: 16) }.joined()
        case .array(let items): return "[" + items.map(self.text).joined(separator: ",") + "]"
        }
    }

    /// Every pet row as one line of text, in name order: a checksum of the pet table.
    static func petsChecksum(_ url: String) throws -> [String] {
        try self.column(url, """
            SELECT name || '|' || COALESCE(owner, '-') || '|' || COALESCE(species, '-') || '|' || COALESCE(sex, '-')
                || '|' || COALESCE(CAST(birth AS TEXT), '-') || '|' || COALESCE(CAST(death AS TEXT), '-')
            FROM pet ORDER BY name
            """)
    }
}
