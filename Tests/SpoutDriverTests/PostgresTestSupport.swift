import Foundation
import SpoutCore
import SpoutPostgres
import SpoutTestDatabases
import SpoutTestSupport
import Testing

/// Connections to the test server for the driver's own tests (its URL and the rule for when
/// they run are ``TestDatabases``', the one gate of every PostgreSQL test).
enum PostgresTestEnvironment {
    /// Reads the remaining rows of `cursor`.
    static func readRows(_ cursor: any RowCursor) throws -> [[SQLValue]] {
        var rows: [[SQLValue]] = []
        while try cursor.next() {
            rows.append((0..<cursor.columns.count).map { cursor.value(at: $0) })
        }
        return rows
    }

    /// A new connection to the test server.
    static func connect(statistics: QueryStatistics = QueryStatistics()) throws -> PostgresConnection {
        let url = try TestDatabases.requirePostgresURL()
        let driver = try PostgresDriver(url: url)
        let connection = try driver.connect(readOnly: false, statistics: statistics)
        return try #require(connection as? PostgresConnection)
    }
}

extension PostgresConnection {
    /// Runs `sql` (with `:name` parameters) and returns every row.
    func rows(
        _ sql: String,
        _ arguments: [String: SQLValue] = [:],
        options: QueryOptions = QueryOptions()
    ) throws -> [[SQLValue]] {
        let parsed = try ParsedSQL(sql, dialect: .postgres)
        let cursor = try self.query(parsed, parsed.bind(arguments), options: options)
        defer { cursor.close() }
        return try PostgresTestEnvironment.readRows(cursor)
    }

    /// The single value of a one-row, one-column query.
    func scalar(_ sql: String, _ arguments: [String: SQLValue] = [:]) throws -> SQLValue {
        let rows = try self.rows(sql, arguments)
        try #require(rows.count == 1 && rows[0].count == 1, "expected one value, got \(rows)")
        return rows[0][0]
    }

    @discardableResult
    func run(_ sql: String, _ arguments: [String: SQLValue] = [:]) throws -> Int {
        let parsed = try ParsedSQL(sql, dialect: .postgres)
        return try self.execute(parsed, parsed.bind(arguments))
    }

    /// Creates a uniquely named schema, makes it the search path, runs `body`, drops it.
    func withScratchSchema(_ body: (String) throws -> Void) throws {
        let schema = "spout_pg_t_\(UInt32.random(in: 0...UInt32.max))"
        try self.executeScript("CREATE SCHEMA \(schema); SET search_path = \(schema)")
        defer {
            _ = self.reset()
            try? self.executeScript("DROP SCHEMA \(schema) CASCADE")
        }
        try body(schema)
    }
}


/// The resident set size of this process in bytes (Linux), or nil.
func postgresTestResidentMemoryBytes() -> Int? {
    guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
    let fields = statm.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}
