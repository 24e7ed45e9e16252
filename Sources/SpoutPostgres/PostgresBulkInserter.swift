import SpoutCore

/// Streams rows into `COPY ... FROM STDIN` in PostgreSQL's text format.
///
/// Each value is rendered like a text parameter (``SpoutCore/SQLValue/appendPostgresText(to:)``),
/// then backslash, tab, newline and carriage return are escaped; NULL is `\N`. Rows are
/// buffered and sent about 64 KiB at a time. Dropping the inserter before ``finish()`` aborts
/// the COPY: none of its rows are stored.
final class PostgresBulkInserter: BulkInserter {
    static let flushThreshold = 64 * 1024

    private let connection: PostgresConnection
    private let columnCount: Int
    private var buffer: [UInt8] = []
    /// One rendered value before escaping; reused.
    private var field: [UInt8] = []
    private var isFinished = false
    /// The rows in `buffer`.
    private var bufferedRows = 0

    init(connection: PostgresConnection, columnCount: Int) {
        self.connection = connection
        self.columnCount = columnCount
        self.buffer.reserveCapacity(Self.flushThreshold + 4096)
    }

    deinit {
        self.abandon()
    }

    func append(_ row: [SQLValue]) throws {
        guard !self.isFinished else {
            throw DatabaseError(.other, message: "the bulk insert has already ended")
        }
        guard row.count == self.columnCount else {
            throw DatabaseError(
                .invalidValue,
                message: "a row has \(row.count) values, the bulk insert has \(self.columnCount) columns"
            )
        }
        let rowStart = self.buffer.count
        for (position, value) in row.enumerated() {
            if position > 0 {
                self.buffer.append(UInt8(ascii: "\t"))
            }
            if value.isNull {
                self.buffer.append(UInt8(ascii: "\\"))
                self.buffer.append(UInt8(ascii: "N"))
                continue
            }
            self.field.removeAll(keepingCapacity: true)
            value.appendPostgresText(to: &self.field)
            for byte in self.field {
                switch byte {
                case 0:
                    self.buffer.removeSubrange(rowStart...)
                    throw DatabaseError(.invalidValue, message: "value \(position + 1) of a row contains a NUL character")
                case UInt8(ascii: "\\"):
                    self.buffer.append(UInt8(ascii: "\\"))
                    self.buffer.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "\t"):
                    self.buffer.append(UInt8(ascii: "\\"))
                    self.buffer.append(UInt8(ascii: "t"))
                case UInt8(ascii: "\n"):
                    self.buffer.append(UInt8(ascii: "\\"))
                    self.buffer.append(UInt8(ascii: "n"))
                case UInt8(ascii: "\r"):
                    self.buffer.append(UInt8(ascii: "\\"))
                    self.buffer.append(UInt8(ascii: "r"))
                default:
                    self.buffer.append(byte)
                }
            }
        }
        self.buffer.append(UInt8(ascii: "\n"))
        self.bufferedRows += 1
        if self.buffer.count >= Self.flushThreshold {
            try self.flush()
        }
    }

    /// Sends the rows buffered.
    func flush() throws {
        guard !self.buffer.isEmpty else { return }
        do {
            try self.connection.putCopyData(self.buffer)
        } catch {
            self.isFinished = true
            throw error
        }
        self.connection.statistics.recordCopiedRows(self.bufferedRows)
        self.bufferedRows = 0
        self.buffer.removeAll(keepingCapacity: true)
    }

    func finish() throws -> Int {
        guard !self.isFinished else {
            throw DatabaseError(.other, message: "the bulk insert has already ended")
        }
        try self.flush()
        self.isFinished = true
        return try self.connection.endCopy()
    }

    /// Aborts an unfinished COPY (see ``PostgresConnection/abandonCopy()``).
    func abandon() {
        guard !self.isFinished else { return }
        self.isFinished = true
        self.buffer = []
        self.connection.abandonCopy()
    }
}
