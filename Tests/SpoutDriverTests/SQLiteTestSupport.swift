import Foundation
import SpoutCore
import Testing

@testable import SpoutSQLite

/// A fresh SQLite database file in its own temporary directory, for one test.
struct SQLiteTestDatabase {
    let directory: String
    let path: String
    let driver: SQLiteDriver

    /// Creates a directory for the database; the file itself appears with the first
    /// read-write connection.
    init(busyTimeoutMilliseconds: Int = 5000) throws {
        self.directory = NSTemporaryDirectory() + "spout-sqlite-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
        self.path = self.directory + "/test.sqlite"
        self.driver = try SQLiteDriver(url: "sqlite:" + self.path, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
    }

    /// Runs `body` on a fresh database and removes its directory afterwards.
    static func with<Result>(
        busyTimeoutMilliseconds: Int = 5000, _ body: (SQLiteTestDatabase) throws -> Result
    ) throws -> Result {
        let database = try SQLiteTestDatabase(busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        defer { try? FileManager.default.removeItem(atPath: database.directory) }
        return try body(database)
    }

    func connect(readOnly: Bool = false, statistics: QueryStatistics = QueryStatistics()) throws -> SQLiteConnection {
        try sqliteConnection(self.driver.connect(readOnly: readOnly, statistics: statistics))
    }
}

/// The connection as the SQLite driver's own type.
func sqliteConnection(_ connection: any DatabaseConnection) throws -> SQLiteConnection {
    try #require(connection as? SQLiteConnection)
}

/// Named-parameter SQL rendered for SQLite.
func sqliteSQL(_ source: String) throws -> ParsedSQL {
    try ParsedSQL(source, dialect: .sqlite)
}

extension DatabaseConnection {
    /// Every row of a query, read to the end.
    func sqliteRows(_ source: String, _ parameters: [SQLValue] = []) throws -> [[SQLValue]] {
        let cursor = try self.query(sqliteSQL(source), parameters, options: QueryOptions())
        defer { cursor.close() }
        var rows: [[SQLValue]] = []
        while try cursor.next() {
            rows.append((0..<cursor.columns.count).map { cursor.value(at: $0) })
        }
        return rows
    }

    /// The single value of a one-row, one-column query.
    func sqliteScalar(_ source: String, _ parameters: [SQLValue] = []) throws -> SQLValue {
        let rows = try self.sqliteRows(source, parameters)
        try #require(rows.count == 1 && rows[0].count == 1, "expected one value, got \(rows)")
        return rows[0][0]
    }

    @discardableResult
    func sqliteExecute(_ source: String, _ parameters: [SQLValue] = []) throws -> Int {
        try self.execute(sqliteSQL(source), parameters)
    }
}

/// The error code of a ``DatabaseError`` thrown by `body`, or nil when it did not throw one.
func sqliteErrorCode(_ body: () throws -> Void) -> DatabaseError.Code? {
    do {
        try body()
        return nil
    } catch let error as DatabaseError {
        return error.code
    } catch {
        return DatabaseError.Code("unexpected \(type(of: error))")
    }
}
