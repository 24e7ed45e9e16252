import CLibPQ
import SpoutCore

/// A cursor over a server-side cursor (`DECLARE spout_cN NO SCROLL CURSOR`), read in batches of
/// one `FETCH` each: the first of `batchSize` rows, the later ones of as many rows as fit in
/// ``batchBytes`` by the size of the rows before (at most `batchSize`, at least
/// ``minimumBatch``), so that after the first batch wide rows never hold much more than
/// ``batchBytes`` at a time.
/// Between batches the connection runs other statements, unless the cursor
/// reads ahead (`prefetch`): then each next `FETCH` is sent as soon as a batch arrives, so the
/// server produces it while the caller encodes and writes the current one (as a single-row
/// stream overlaps the two), and the connection is busy until the cursor is closed.
///
/// The first batch comes as text, and tells the columns' types; when every column has a binary
/// form Spout reads (``PostgresBinaryColumn`` lists the types), the later batches are fetched
/// in binary, which costs the server, libpq and the row writer less. Either way a value reads
/// and writes the same.
///
/// The cursor lives in the transaction it was declared in. ``close()`` (also when the rows run
/// out, or when the cursor is dropped) sends `CLOSE` only while that transaction is still open
/// and not failed; after the transaction has ended, ``next()`` throws. A `FETCH` sent ahead is
/// read to its end by ``close()``, not cancelled, so the transaction goes on (a commit after a
/// limit stopped reading succeeds); ``PostgresConnection/reset()`` cancels it instead.
final class PostgresServerCursor: JSONWritingCursor {
    let columns: [Column]
    /// Constant, so that reading it for every value of every row takes no reference counting
    /// (a `var` array is retained and released around each row's loop: about 6 % of a stream's
    /// CPU on `/salaries`).
    private let decoders: [PostgresColumnDecoder]
    /// Every column's binary form, when each has one: the batches after the first are then
    /// fetched in binary. Constant, as ``decoders``.
    private let binaryColumns: [PostgresBinaryColumn]?
    private let connection: PostgresConnection
    private let name: String
    private let batchSize: Int
    /// The rows the next `FETCH` asks for.
    private(set) var nextCount: Int
    /// The rows the current batch's `FETCH` asked for.
    private var requested: Int
    private let prefetch: Bool
    private let epoch: Int
    /// A FETCH for the next batch was sent ahead and not read yet.
    private var nextBatchSent = false
    /// The current FETCH result.
    private var batch: OpaquePointer?
    /// Whether ``batch`` holds binary values (read with ``binaryColumns``).
    private(set) var batchIsBinary = false
    private var rowCount: Int32 = 0
    private var row: Int32 = -1
    /// The last FETCH returned fewer rows than asked: there are no more.
    private var isExhausted = false
    private var isFinished = false

    /// Fetches the first batch, which tells the columns. Closes the cursor when it throws.
    init(connection: PostgresConnection, name: String, batchSize: Int, prefetch: Bool, epoch: Int) throws {
        let first: OpaquePointer
        do {
            first = try connection.fetch(from: name, count: batchSize, epoch: epoch)
        } catch {
            connection.closeServerCursor(name, epoch: epoch)
            throw error
        }
        let description = connection.resultDescriptions.description(of: first)
        self.columns = description.columns
        self.decoders = description.decoders
        self.binaryColumns = PostgresBinaryColumn.columns(of: first)
        self.connection = connection
        self.name = name
        self.batchSize = batchSize
        self.nextCount = batchSize
        self.requested = batchSize
        self.prefetch = prefetch
        self.epoch = epoch
        do {
            try self.adopt(first)
        } catch {
            self.close()
            throw error
        }
    }

    deinit {
        self.close()
    }

    private func fetchBatch() throws {
        PQclear(self.batch)
        self.batch = nil
        let result: OpaquePointer
        if self.nextBatchSent {
            self.nextBatchSent = false
            result = try self.connection.receiveFetch()
        } else {
            self.requested = self.nextCount
            result = try self.connection.fetch(from: self.name, count: self.requested, epoch: self.epoch, binary: self.binaryColumns != nil)
        }
        try self.adopt(result)
    }

    /// Makes `result` (a FETCH of ``requested`` rows, now owned by the cursor) the current
    /// batch, sizes the next one, and sends it ahead when the cursor prefetches.
    private func adopt(_ result: OpaquePointer) throws {
        self.batch = result
        self.batchIsBinary = PQnfields(result) > 0 && PQfformat(result, 0) == 1
        self.rowCount = PQntuples(result)
        self.row = -1
        self.isExhausted = Int(self.rowCount) < self.requested
        if self.rowCount > 0 {
            let bytesPerRow = max(1, Int(PQresultMemorySize(result)) / Int(self.rowCount))
            self.nextCount = max(min(self.batchSize, Self.batchBytes / bytesPerRow), min(Self.minimumBatch, self.batchSize))
        }
        if self.prefetch && !self.isExhausted {
            self.requested = self.nextCount
            try self.connection.sendFetch(from: self.name, count: self.requested, epoch: self.epoch, binary: self.binaryColumns != nil)
            self.nextBatchSent = true
        }
    }

    /// The most memory a batch takes when its rows are wide (libpq's memory for the result).
    static let batchBytes = 1024 * 1024
    /// The fewest rows a batch asks for, however wide they are.
    static let minimumBatch = 100

    func next() throws -> Bool {
        guard !self.isFinished else { return false }
        self.row += 1
        if self.row < self.rowCount {
            return true
        }
        if self.isExhausted {
            self.close()
            return false
        }
        do {
            try self.fetchBatch()
        } catch {
            self.close()
            throw error
        }
        self.row = 0
        guard self.rowCount > 0 else {
            self.close()
            return false
        }
        return true
    }

    func value(at index: Int) -> SQLValue {
        guard let batch = self.batch, self.row >= 0, self.row < self.rowCount else { return .null }
        if self.batchIsBinary, let binary = self.binaryColumns {
            guard let bytes = PostgresColumnDecoder.text(in: batch, row: self.row, column: Int32(index)) else { return .null }
            return binary[index].value(bytes)
        }
        return self.decoders[index].value(in: batch, row: self.row, column: Int32(index))
    }

    func isNull(at index: Int) -> Bool {
        guard let batch = self.batch, self.row >= 0, self.row < self.rowCount else { return true }
        return PQgetisnull(batch, self.row, Int32(index)) == 1
    }

    /// Writes the value straight from the batch's text (``PostgresColumnDecoder/writeJSON(in:row:column:dateFormat:to:)``);
    /// `null` where ``value(at:)`` would return `.null` because the cursor is not on a row.
    func writeJSON(at index: Int, dateFormat: DateFormat, to out: inout ChunkedOutput) {
        guard let batch = self.batch, self.row >= 0, self.row < self.rowCount else {
            out.append("null")
            return
        }
        if self.batchIsBinary, let binary = self.binaryColumns {
            Self.writeBinary(binary[index], in: batch, row: self.row, column: Int32(index), dateFormat: dateFormat, to: &out)
            return
        }
        self.decoders[index].writeJSON(in: batch, row: self.row, column: Int32(index), dateFormat: dateFormat, to: &out)
    }

    @inline(__always)
    private static func writeBinary(
        _ binary: PostgresBinaryColumn, in batch: OpaquePointer, row: Int32, column: Int32, dateFormat: DateFormat, to out: inout ChunkedOutput
    ) {
        guard let bytes = PostgresColumnDecoder.text(in: batch, row: row, column: column) else { return out.append("null") }
        binary.writeJSON(bytes, dateFormat: dateFormat, to: &out)
    }

    /// The row's values as `layout`'s object, the batch and row found once rather than once
    /// per value.
    func writeJSONObject(_ layout: CompactObjectLayout, dateFormat: DateFormat, to out: inout ChunkedOutput) {
        guard let batch = self.batch, self.row >= 0, self.row < self.rowCount, layout.count <= self.decoders.count else {
            layout.write(to: &out) { _, out in out.append("null") }
            return
        }
        let row = self.row
        if self.batchIsBinary, let binary = self.binaryColumns {
            layout.write(to: &out) { column, out in
                Self.writeBinary(binary[column], in: batch, row: row, column: Int32(column), dateFormat: dateFormat, to: &out)
            }
            return
        }
        let decoders = self.decoders
        layout.write(to: &out) { column, out in
            decoders[column].writeJSON(in: batch, row: row, column: Int32(column), dateFormat: dateFormat, to: &out)
        }
    }

    func close() {
        guard !self.isFinished else { return }
        self.isFinished = true
        PQclear(self.batch)
        self.batch = nil
        if self.nextBatchSent {
            self.nextBatchSent = false
            self.connection.abandonFetch(keepingTransaction: true)
        }
        self.connection.closeServerCursor(self.name, epoch: self.epoch)
    }
}
