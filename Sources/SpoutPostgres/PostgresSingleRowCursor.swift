import CLibPQ
import SpoutCore

/// A cursor over a query running in libpq single-row mode: each ``next()`` reads one
/// `PGRES_SINGLE_TUPLE` result from the socket, so memory stays flat however many rows come.
///
/// The connection is busy until ``next()`` returns `false` or throws, or ``close()`` is called
/// (which cancels the statement if it is still running and drains the rest). Dropping an
/// unfinished cursor closes it.
final class PostgresSingleRowCursor: JSONWritingCursor {
    let columns: [Column]
    private let decoders: [PostgresColumnDecoder]
    /// Nil for a cursor that was complete when created.
    private let connection: PostgresConnection?
    /// The first row, read before the cursor was returned; handed out by the first `next()`.
    private var pending: OpaquePointer?
    /// The result holding the current row.
    private var current: OpaquePointer?
    private var isFinished: Bool

    /// A cursor whose first row is `firstRow` (a `PGRES_SINGLE_TUPLE` result it now owns).
    init(connection: PostgresConnection, firstRow: OpaquePointer) {
        let description = connection.resultDescriptions.description(of: firstRow)
        self.columns = description.columns
        self.decoders = description.decoders
        self.connection = connection
        self.pending = firstRow
        self.isFinished = false
    }

    /// A cursor with no rows (the statement had already completed).
    init(finishedWith description: PostgresResultDescription) {
        self.columns = description.columns
        self.decoders = description.decoders
        self.connection = nil
        self.isFinished = true
    }

    deinit {
        self.close()
    }

    func next() throws -> Bool {
        guard !self.isFinished, let connection = self.connection else { return false }
        PQclear(self.current)
        self.current = nil
        let result: OpaquePointer?
        if let pending = self.pending {
            result = pending
            self.pending = nil
        } else {
            result = connection.nextStreamResult()
        }
        guard let result else {
            self.finish(cancelling: false)
            return false
        }
        switch PQresultStatus(result) {
        case PGRES_SINGLE_TUPLE:
            self.current = result
            return true
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK:
            PQclear(result)
            self.finish(cancelling: false)
            return false
        default:
            let error = connection.makeError(result)
            PQclear(result)
            self.finish(cancelling: false)
            throw error
        }
    }

    func value(at index: Int) -> SQLValue {
        guard let current = self.current else { return .null }
        return self.decoders[index].value(in: current, row: 0, column: Int32(index))
    }

    func isNull(at index: Int) -> Bool {
        guard let current = self.current else { return true }
        return PQgetisnull(current, 0, Int32(index)) == 1
    }

    /// Writes the value straight from the row's text (``PostgresColumnDecoder/writeJSON(in:row:column:dateFormat:to:)``);
    /// `null` when the cursor is not on a row.
    func writeJSON(at index: Int, dateFormat: DateFormat, to out: inout ChunkedOutput) {
        guard let current = self.current else {
            out.append("null")
            return
        }
        self.decoders[index].writeJSON(in: current, row: 0, column: Int32(index), dateFormat: dateFormat, to: &out)
    }

    /// The row's values as `layout`'s object, the row found once rather than once per value.
    func writeJSONObject(_ layout: CompactObjectLayout, dateFormat: DateFormat, to out: inout ChunkedOutput) {
        guard let current = self.current, layout.count <= self.decoders.count else {
            layout.write(to: &out) { _, out in out.append("null") }
            return
        }
        let decoders = self.decoders
        layout.write(to: &out) { column, out in
            decoders[column].writeJSON(in: current, row: 0, column: Int32(column), dateFormat: dateFormat, to: &out)
        }
    }

    func close() {
        self.finish(cancelling: true)
    }

    private func finish(cancelling: Bool) {
        guard !self.isFinished else { return }
        self.isFinished = true
        PQclear(self.pending)
        PQclear(self.current)
        self.pending = nil
        self.current = nil
        self.connection?.endStream(cancelling: cancelling)
    }
}
