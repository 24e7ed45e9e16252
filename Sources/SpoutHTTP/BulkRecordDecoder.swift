/// Splits a bulk body into records as its bytes arrive, in any pieces: each record is handed
/// on as soon as its last byte is pushed, so memory holds one record (at most
/// `maximumRecordSize` bytes) and one piece, whatever the body's size.
///
/// Contract: ``push(_:_:)`` any number of times, then ``finish(_:)`` once; records come out
/// in order, each with its ``BulkPosition``. A record that does not parse throws
/// ``BulkRecordError`` naming its position, and the decoder must not be used after a throw.
/// Errors `each` throws pass through.
public struct BulkRecordDecoder: Sendable {
    private enum Splitter: Sendable {
        case jsonArray(JSONArrayRecordSplitter)
        case jsonLines(JSONLinesRecordSplitter)
        case csv(CSVRecordReader)
        /// Held while a splitter is taken out to be changed in place (no copy of its buffer).
        case taken
    }

    private var splitter: Splitter

    /// The largest record taken by default: 1 MiB.
    public static let defaultMaximumRecordSize = 1 << 20

    public init(format: BulkFormat, maximumRecordSize: Int = Self.defaultMaximumRecordSize) {
        switch format {
        case .jsonArray: self.splitter = .jsonArray(JSONArrayRecordSplitter(maximumRecordSize: maximumRecordSize))
        case .jsonLines: self.splitter = .jsonLines(JSONLinesRecordSplitter(maximumRecordSize: maximumRecordSize))
        case .csv: self.splitter = .csv(CSVRecordReader(maximumRecordSize: maximumRecordSize))
        }
    }

    /// Takes the next bytes of the body, calling `each` for every record they complete.
    public mutating func push(_ bytes: some Collection<UInt8>, _ each: (BulkRecord) throws -> Void) throws {
        // The bytes are read through a buffer pointer: a loop over the generic collection
        // would go through its witness table for every byte.
        let pushed: Void? = try bytes.withContiguousStorageIfAvailable { buffer in try self.push(buffer, each) }
        if pushed == nil {
            try Array(bytes).withUnsafeBufferPointer { buffer in try self.push(buffer, each) }
        }
    }

    private mutating func push(_ bytes: UnsafeBufferPointer<UInt8>, _ each: (BulkRecord) throws -> Void) throws {
        switch self.splitter {
        case .jsonArray(var splitter):
            self.splitter = .taken
            defer { self.splitter = .jsonArray(splitter) }
            for byte in bytes { if let record = try splitter.take(byte) { try each(record) } }
        case .jsonLines(var splitter):
            self.splitter = .taken
            defer { self.splitter = .jsonLines(splitter) }
            try splitter.take(bytes, each)
        case .csv(var reader):
            self.splitter = .taken
            defer { self.splitter = .csv(reader) }
            try reader.take(bytes, each)
        case .taken:
            preconditionFailure("a bulk decoder used after it threw")
        }
    }

    /// The body has ended: hands on its last record, if one was still open, or throws when
    /// the body stopped inside a record (or, for JSON, before its array closed).
    public mutating func finish(_ each: (BulkRecord) throws -> Void) throws {
        let last: BulkRecord?
        switch self.splitter {
        case .jsonArray(var splitter): last = try splitter.finish()
        case .jsonLines(var splitter): last = try splitter.finish()
        case .csv(var reader): last = try reader.finish()
        case .taken: preconditionFailure("a bulk decoder used after it threw")
        }
        if let last { try each(last) }
    }
}
