import CSQLite3
import SpoutCore

/// Loads rows through one prepared `INSERT INTO "table" ("c1", ...) VALUES (?1, ...)`,
/// stepped once per row.
///
/// Rows are written inside the caller's transaction, if any; without one every row commits on
/// its own, so loaders should wrap the load in ``SQLiteConnection/begin(readOnly:)`` and
/// ``SQLiteConnection/commit()``. After ``finish()``, or after the connection reclaimed the
/// statement (``SQLiteConnection/reset()``), ``append(_:)`` throws.
final class SQLiteBulkInserter: BulkInserter {
    private let connection: SQLiteConnection
    private let statement: SQLiteStatement
    private let lease: UInt64
    private let columnCount: Int
    private let deadline: MonotonicInstant?
    private var count = 0

    init(
        connection: SQLiteConnection, statement: SQLiteStatement, lease: UInt64, columnCount: Int,
        deadline: MonotonicInstant?
    ) {
        self.connection = connection
        self.statement = statement
        self.lease = lease
        self.columnCount = columnCount
        self.deadline = deadline
    }

    deinit {
        self.connection.endLease(of: self.statement, lease: self.lease)
    }

    func append(_ row: [SQLValue]) throws {
        guard self.statement.isHeld(by: self.lease), let handle = self.statement.handle else {
            throw DatabaseError(.other, message: "the bulk insert was finished or its connection was reset")
        }
        guard row.count == self.columnCount else {
            throw DatabaseError(
                .invalidValue, message: "bulk insert row has \(row.count) values for \(self.columnCount) columns")
        }
        for index in 0..<row.count {
            let result = SQLiteValueBinder.bind(row[index], to: handle, at: Int32(index + 1))
            guard result == SQLITE_OK else { throw self.connection.error(result, phase: .run) }
        }
        let result = self.connection.step(handle, deadline: self.deadline)
        guard result == SQLITE_DONE else {
            let error = self.connection.error(result == SQLITE_ROW ? SQLITE_MISUSE : result, phase: .run)
            sqlite3_reset(handle)
            throw error
        }
        sqlite3_reset(handle)
        self.count += 1
    }

    func finish() throws -> Int {
        guard self.statement.isHeld(by: self.lease) else {
            throw DatabaseError(.other, message: "the bulk insert was finished or its connection was reset")
        }
        self.connection.endLease(of: self.statement, lease: self.lease)
        return self.count
    }
}
