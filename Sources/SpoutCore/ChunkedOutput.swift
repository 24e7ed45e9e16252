/// A byte buffer that hands itself to a ``ByteSink`` whenever it reaches ``chunkSize``.
///
/// Encoders append to it; memory stays bounded by one chunk plus the largest single value.
public struct ChunkedOutput {
    /// The size at which a chunk is handed to the sink.
    public static let chunkSize = 32 * 1024

    @usableFromInline var buffer: [UInt8]
    @usableFromInline let sink: any ByteSink
    /// Bytes handed to the sink so far, plus those still buffered.
    public private(set) var flushedCount = 0

    public init(sink: any ByteSink) {
        self.sink = sink
        self.buffer = []
        self.buffer.reserveCapacity(Self.chunkSize + 1024)
    }

    @inlinable
    public mutating func append(_ byte: UInt8) {
        self.buffer.append(byte)
    }

    @inlinable
    public mutating func append<Bytes: Sequence<UInt8>>(contentsOf bytes: Bytes) {
        self.buffer.append(contentsOf: bytes)
    }

    @inlinable
    public mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { self.buffer.append(contentsOf: $0) }
    }

    /// Hands the buffer to the sink if it holds a full chunk. Call between values.
    @inlinable
    public mutating func flushIfFull() throws {
        if self.buffer.count >= Self.chunkSize {
            try self.flush()
        }
    }

    @usableFromInline
    mutating func flush() throws {
        try self.sink.write(self.buffer)
        self.flushedCount += self.buffer.count
        self.buffer.removeAll(keepingCapacity: true)
    }

    /// Hands the rest to the sink's `finish`. Call once, after the last byte.
    public mutating func finish() throws {
        try self.sink.finish(self.buffer)
        self.flushedCount += self.buffer.count
        self.buffer.removeAll()
    }

    public var totalCount: Int { self.flushedCount + self.buffer.count }
}
