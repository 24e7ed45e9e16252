import CSQLite3
import SpoutCore

/// A cursor over the rows of one leased ``SQLiteStatement``.
///
/// Rows are stepped one at a time with `sqlite3_step` (the first step already ran in
/// ``SQLiteConnection/query(_:_:options:)``): nothing else is read ahead, so a cursor over
/// millions of rows holds one row at a time. The statement goes back to its connection (reset,
/// bindings cleared) as soon as the last row was read, an error was thrown, or ``close()`` was
/// called, whichever comes first; dropping the cursor closes it too. When the connection
/// reclaims the statement (``SQLiteConnection/reset()``, ``SQLiteConnection/close()``), the
/// cursor ends: ``next()`` returns `false`.
final class SQLiteCursor: JSONWritingCursor {
    let columns: [Column]
    private let connection: SQLiteConnection
    private let statement: SQLiteStatement
    private let lease: UInt64
    private let deadline: MonotonicInstant?
    /// For a streamed result: the statement timeout counts database time only (see
    /// ``init(connection:statement:lease:deadline:budget:resultColumns:firstStepFoundRow:)``).
    private var budget: StepBudget?
    private let types: [ColumnType]
    /// How ``SQLiteJSONWriter`` writes each column (`jsonKinds[i]` is `Kind(types[i])`).
    private let jsonKinds: [SQLiteJSONWriter.Kind]
    private var position: Position

    private enum Position {
        /// ``SQLiteConnection/query(_:_:options:)`` stepped once; `foundRow` tells what it found.
        case beforeFirst(foundRow: Bool)
        case onRow
        case ended
    }

    /// The statement timeout of a streamed result, counted as PostgreSQL counts a cursor's
    /// FETCHes: only the time spent stepping, renewed after every `batchRows` rows. The time
    /// between two ``next()`` calls (encoding, and a slow client's backpressure) is not counted,
    /// nor the first instructions of each step (``SQLiteConnection/step(_:within:)``).
    struct StepBudget {
        var timeout: Duration
        var batchRows: Int
        var remaining: Duration
        var rowsInBatch = 0

        init(timeout: Duration, batchRows: Int, spent: Duration) {
            self.timeout = timeout
            self.batchRows = max(1, batchRows)
            self.remaining = timeout - spent
        }
    }

    /// - Parameters:
    ///   - deadline: when the statement times out, for a cursor read at once.
    ///   - budget: for a streamed result, the statement timeout counted in stepping time
    ///     (``StepBudget``); `deadline` is then ignored after the first step.
    ///   - firstStepFoundRow: the result of the first `sqlite3_step`, which the connection ran
    ///     (true: a row is ready; false: the statement is done).
    init(
        connection: SQLiteConnection, statement: SQLiteStatement, lease: UInt64, deadline: MonotonicInstant?,
        budget: StepBudget? = nil, resultColumns: SQLiteStatement.ResultColumns, firstStepFoundRow: Bool
    ) {
        self.connection = connection
        self.statement = statement
        self.lease = lease
        self.deadline = deadline
        self.budget = budget
        self.columns = resultColumns.columns
        self.types = resultColumns.types
        self.jsonKinds = resultColumns.jsonKinds
        self.position = .beforeFirst(foundRow: firstStepFoundRow)
    }

    deinit {
        self.close()
    }

    func next() throws -> Bool {
        guard self.statement.isHeld(by: self.lease), let handle = self.statement.handle else {
            self.finish()
            return false
        }
        switch self.position {
        case .ended:
            return false
        case .beforeFirst(let foundRow):
            if foundRow {
                self.position = .onRow
                return true
            }
            self.finish()
            return false
        case .onRow:
            break
        }
        let result: Int32
        if var budget = self.budget {
            budget.rowsInBatch += 1
            if budget.rowsInBatch >= budget.batchRows {
                budget.rowsInBatch = 0
                budget.remaining = budget.timeout
            }
            let (stepped, spent) = self.connection.step(handle, within: budget.remaining)
            result = stepped
            budget.remaining -= spent
            self.budget = budget
        } else {
            result = self.connection.step(handle, deadline: self.deadline)
        }
        if result == SQLITE_ROW {
            return true
        }
        if result == SQLITE_DONE {
            self.finish()
            return false
        }
        // Read the error before the statement is reset.
        let error = self.connection.error(result, phase: .run)
        self.finish()
        throw error
    }

    /// The statement's handle while the cursor is on a row of it; nil otherwise.
    private var rowHandle: OpaquePointer? {
        guard case .onRow = self.position, self.statement.isHeld(by: self.lease) else { return nil }
        return self.statement.handle
    }

    func value(at index: Int) -> SQLValue {
        guard self.types.indices.contains(index), let handle = self.rowHandle else { return .null }
        return SQLiteValueReader.value(of: handle, at: Int32(index), type: self.types[index])
    }

    func isNull(at index: Int) -> Bool {
        guard self.types.indices.contains(index), let handle = self.rowHandle else { return true }
        return sqlite3_column_type(handle, Int32(index)) == SQLITE_NULL
    }

    /// Writes the value straight from the statement (``SQLiteJSONWriter``); `null` where
    /// ``value(at:)`` would return `.null` because the cursor is not on a row.
    func writeJSON(at index: Int, dateFormat: DateFormat, to out: inout ChunkedOutput) {
        guard self.jsonKinds.indices.contains(index), let handle = self.rowHandle else {
            out.append("null")
            return
        }
        Self.writeJSON(handle, at: index, kind: self.jsonKinds[index], type: self.types[index], dateFormat: dateFormat, to: &out)
    }

    /// The row's values as `layout`'s object, the statement checked once for the row rather
    /// than once per value; `null`s where ``writeJSON(at:dateFormat:to:)`` would write them.
    func writeJSONObject(_ layout: CompactObjectLayout, dateFormat: DateFormat, to out: inout ChunkedOutput) {
        guard layout.count <= self.jsonKinds.count, let handle = self.rowHandle else {
            layout.write(to: &out) { _, out in out.append("null") }
            return
        }
        let kinds = self.jsonKinds
        let types = self.types
        layout.write(to: &out) { column, out in
            Self.writeJSON(handle, at: column, kind: kinds[column], type: types[column], dateFormat: dateFormat, to: &out)
        }
    }

    @inline(__always)
    private static func writeJSON(
        _ handle: OpaquePointer, at index: Int, kind: SQLiteJSONWriter.Kind, type: ColumnType, dateFormat: DateFormat, to out: inout ChunkedOutput
    ) {
        switch kind {
        case .plain: SQLiteJSONWriter.write(handle, at: Int32(index), isDate: false, dateFormat: dateFormat, to: &out)
        case .date: SQLiteJSONWriter.write(handle, at: Int32(index), isDate: true, dateFormat: dateFormat, to: &out)
        case .read: SQLiteJSONWriter.writeRead(handle, at: Int32(index), type: type, dateFormat: dateFormat, to: &out)
        }
    }

    func close() {
        self.finish()
    }

    private func finish() {
        if case .ended = self.position { return }
        self.position = .ended
        self.connection.endLease(of: self.statement, lease: self.lease)
    }
}
