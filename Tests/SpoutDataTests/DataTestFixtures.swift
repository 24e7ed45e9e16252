import Foundation
import SpoutCore
import SpoutDrivers
import SpoutTestDatabases
import SpoutTestSupport
import Testing

/// Paths, temporary directories and database helpers shared by the SpoutData tests.
enum DataTestFixtures {
    /// The repository's `sql` directory.
    static var sqlDirectory: String { TestFixtures.repositoryRoot.appendingPathComponent("sql").path }

    /// The hand-written test_db subset in `Tests/Fixtures/test_db`.
    static var sampleDirectory: String { TestFixtures.testDB }
    static var petsTSV: String { TestFixtures.petsTSV }

    /// A new empty directory, removed by the returned closure.
    static func makeTemporaryDirectory() throws -> (path: String, remove: @Sendable () -> Void) {
        let path = (NSTemporaryDirectory() as NSString).appendingPathComponent("spout-data-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return (path, { try? FileManager.default.removeItem(atPath: path) })
    }

    struct CommandFailed: Error, CustomStringConvertible {
        var description: String
    }

    static func run(_ executable: String, _ arguments: [String]) throws {
        let result = try ChildProcess.run(executable: executable, arguments: arguments) as ChildProcess.Result
        guard result.status == 0 else {
            throw CommandFailed(description: "\(executable) \(arguments) exited with \(result.status): \(result.standardError)")
        }
    }

    /// Writes `text` to `directory/name`.
    static func write(_ text: String, to directory: String, name: String) throws {
        try text.write(toFile: (directory as NSString).appendingPathComponent(name), atomically: true, encoding: .utf8)
    }

    /// Copies every file of `source` into `target`.
    static func copyFiles(from source: String, to target: String) throws {
        for file in try FileManager.default.contentsOfDirectory(atPath: source) {
            try FileManager.default.copyItem(
                atPath: (source as NSString).appendingPathComponent(file), toPath: (target as NSString).appendingPathComponent(file))
        }
    }
}

/// Which database an integration test runs against.
/// A fresh database of `dialect` for one test, with an open read-write connection; both are
/// closed and dropped when `body` returns. Without a PostgreSQL server (outside CI) a
/// PostgreSQL case ends at once, passing; under `CI=true` it fails instead
/// (``TestDatabases/make(_:prefix:)``). SQLite cases always run.
func withTestDatabase(_ dialect: SQLDialect, _ body: (any DatabaseConnection) throws -> Void) throws {
    guard let database = try TestDatabases.make(dialect, prefix: "spout_t_data") else { return }
    defer { database.drop() }
    let connection = try Drivers.driver(for: database.url).connect(readOnly: false, statistics: QueryStatistics())
    defer { connection.close() }
    try body(connection)
}

/// Runs `sql` and returns all rows.
func fetchRows(_ connection: any DatabaseConnection, _ sql: String) throws -> [[SQLValue]] {
    let cursor = try connection.query(try ParsedSQL(sql, dialect: connection.dialect), [], options: QueryOptions())
    defer { cursor.close() }
    var rows: [[SQLValue]] = []
    while try cursor.next() {
        rows.append((0..<cursor.columns.count).map { cursor.value(at: $0) })
    }
    return rows
}

/// `SELECT count(*) FROM table`.
func countRows(_ connection: any DatabaseConnection, _ table: String) throws -> Int64 {
    let rows = try fetchRows(connection, "SELECT count(*) FROM \(table)")
    guard case .integer(let count) = rows.first?.first else { return -1 }
    return count
}

/// The number of rows of every employees table, keyed by table.
func employeesCounts(_ connection: any DatabaseConnection) throws -> [String: Int64] {
    var counts: [String: Int64] = [:]
    for table in ["departments", "employees", "dept_manager", "dept_emp", "titles", "salaries"] {
        counts[table] = try countRows(connection, table)
    }
    return counts
}

/// `.date(days:)` for `YYYY-MM-DD`.
func date(_ text: String) -> SQLValue {
    .date(days: CivilTime.parseDate(text)!)
}
