/// Splits JSON Lines (one JSON object a line, `\n` or `\r\n` ending each) into records, a byte
/// at a time, each named by its line number from 1. A blank line is skipped (but counted).
/// Each line's bytes are collected (at most `maximumRecordSize`) and read by
/// ``JSONArguments`` as a single write's JSON body is.
struct JSONLinesRecordSplitter: Sendable {
    private let maximumRecordSize: Int
    private var record: [UInt8] = []
    private var line = 1

    init(maximumRecordSize: Int) {
        self.maximumRecordSize = maximumRecordSize
    }

    /// Takes the next byte; returns the record it completes, if any.
    mutating func take(_ byte: UInt8) throws(BulkRecordError) -> BulkRecord? {
        if byte == UInt8(ascii: "\n") { return try self.endLine() }
        guard self.record.count < self.maximumRecordSize else {
            throw .malformed("record larger than \(self.maximumRecordSize) bytes", at: .line(self.line))
        }
        self.record.append(byte)
        return nil
    }

    /// The body ended: the last line, when it had no line end.
    mutating func finish() throws(BulkRecordError) -> BulkRecord? {
        try self.endLine()
    }

    private mutating func endLine() throws(BulkRecordError) -> BulkRecord? {
        let position = BulkPosition.line(self.line)
        defer {
            self.record.removeAll(keepingCapacity: true)
            self.line += 1
        }
        guard self.record.contains(where: { !JSONArrayRecordSplitter.isBlank($0) }) else { return nil }
        do {
            return BulkRecord(arguments: try JSONArguments.parse(self.record), position: position)
        } catch {
            throw .malformed(error.reason, at: position)
        }
    }
}
