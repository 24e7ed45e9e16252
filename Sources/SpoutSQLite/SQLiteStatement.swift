import CSQLite3
import SpoutCore

/// A prepared statement of one ``SQLiteConnection``, used by at most one cursor, execute or
/// bulk load at a time.
///
/// Using a statement is a *lease*: ``lease()`` returns a number, and the holder owns the
/// statement while ``isHeld(by:)`` is true for that number. The connection ends leases when a
/// cursor closes or when ``SQLiteConnection/reset()`` reclaims everything; a holder whose lease
/// ended must not touch the handle again (a cursor then reports its end).
final class SQLiteStatement {
    /// The SQL text the statement was prepared from; the key of the statement cache.
    let sql: String
    /// Whether the connection's statement cache owns this statement (otherwise it is finalized
    /// when its lease ends).
    let isCached: Bool
    /// The `sqlite3_stmt`; nil once finalized.
    private(set) var handle: OpaquePointer?
    private(set) var isLeased = false
    private var leaseNumber: UInt64 = 0
    /// The result columns, computed once per compilation of the statement.
    private var resultColumns: ResultColumns?
    /// `SQLITE_STMTSTATUS_REPREPARE` when ``resultColumns`` was computed.
    private var resultColumnsReprepareCount: Int32 = -1

    init(handle: OpaquePointer, sql: String, isCached: Bool) {
        self.handle = handle
        self.sql = sql
        self.isCached = isCached
    }

    deinit {
        self.finalize()
    }

    /// The result columns of a statement, and what reading them needs.
    struct ResultColumns {
        var columns: [Column]
        /// `columns[i].type`.
        var types: [ColumnType]
        /// How ``SQLiteJSONWriter`` writes each column's values.
        var jsonKinds: [SQLiteJSONWriter.Kind]

        static let empty = ResultColumns(columns: [], types: [], jsonKinds: [])
    }

    /// The result columns (see ``SQLiteColumnTypes/columns(of:)``) and their types, as of the
    /// statement's current compilation: SQLite recompiles a statement after a schema change,
    /// which may change its columns, so the cached list is rebuilt when that happened.
    func columns() -> ResultColumns {
        guard let handle = self.handle else { return .empty }
        let reprepareCount = sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_REPREPARE, 0)
        if let resultColumns = self.resultColumns, reprepareCount == self.resultColumnsReprepareCount {
            return resultColumns
        }
        let columns = SQLiteColumnTypes.columns(of: handle)
        let types = columns.map(\.type)
        let resultColumns = ResultColumns(columns: columns, types: types, jsonKinds: types.map(SQLiteJSONWriter.Kind.init))
        self.resultColumns = resultColumns
        self.resultColumnsReprepareCount = reprepareCount
        return resultColumns
    }

    /// Starts a lease and returns its number. The statement must not be leased already.
    func lease() -> UInt64 {
        precondition(!self.isLeased, "SQLite statement leased twice")
        self.isLeased = true
        self.leaseNumber &+= 1
        return self.leaseNumber
    }

    /// Whether lease `number` is still the current one.
    @inline(__always)
    func isHeld(by number: UInt64) -> Bool {
        self.isLeased && self.leaseNumber == number && self.handle != nil
    }

    /// Ends the current lease: resets the statement and clears its bindings so it can be reused.
    /// The result of `sqlite3_reset` repeats the last step's error, which the holder already saw.
    func endLease() {
        guard self.isLeased else { return }
        self.isLeased = false
        if let handle = self.handle {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
    }

    /// Releases the statement. Idempotent.
    func finalize() {
        self.isLeased = false
        if let handle = self.handle {
            self.handle = nil
            sqlite3_finalize(handle)
        }
    }
}
