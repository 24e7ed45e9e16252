/// Splits JSON Lines (one JSON object a line, `\n` or `\r\n` ending each) into records, a byte
/// at a time, each named by its line number from 1. A blank line is skipped (but counted).
/// Each line's bytes are collected (at most `maximumRecordSize`) and read by
/// ``JSONArguments`` as a single write's JSON body is.
struct JSONLinesRecordSplitter: Sendable {
    private let maximumRecordSize: Int
    private var record: [UInt8] = []
    private var line = 1
    /// The members of the last record: room made for as many in the next.
    private var lastMemberCount = 0

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

    /// Takes the next bytes, calling `each` for every record they complete: the same as
    /// ``take(_:)`` byte by byte, a line's bytes copied at once.
    mutating func take(_ bytes: UnsafeBufferPointer<UInt8>, _ each: (BulkRecord) throws -> Void) throws {
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
            guard self.record.count + (end - start) <= self.maximumRecordSize else {
                throw BulkRecordError.malformed("record larger than \(self.maximumRecordSize) bytes", at: .line(self.line))
            }
            self.record.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<end]))
            guard end < bytes.endIndex else { return }
            if let record = try self.endLine() { try each(record) }
            start = end + 1
        }
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
            let arguments = try JSONArguments.parse(self.record, expectedMembers: self.lastMemberCount)
            self.lastMemberCount = arguments.keys.count
            return BulkRecord(arguments: arguments, position: position)
        } catch {
            throw .malformed(error.reason, at: position)
        }
    }
}
