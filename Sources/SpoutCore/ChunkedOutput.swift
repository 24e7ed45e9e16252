/// A byte buffer that hands itself to a ``ByteSink`` whenever it reaches ``chunkSize``.
///
/// Encoders append to it; memory stays bounded by one chunk plus the largest single value.
///
/// The bytes live in one allocation owned by the value (freed by its `deinit`), not in an
/// `Array`: an append is a capacity check and a store, with no uniqueness check and no
/// reference counting, which is most of what encoding a row costs. The type is noncopyable, so
/// two values can never share (and overwrite) one buffer. Each chunk is lent to the sink for
/// the length of its call (``ByteSink``), which copies what it keeps; the buffer is then reused.
public struct ChunkedOutput: ~Copyable {
    /// The size at which a chunk is handed to the sink.
    public static let chunkSize = 32 * 1024

    /// The buffer; `capacity` bytes allocated, the first `count` initialized.
    @usableFromInline var base: UnsafeMutablePointer<UInt8>
    @usableFromInline var count: Int
    @usableFromInline var capacity: Int
    @usableFromInline let sink: any ByteSink
    /// Bytes handed to the sink so far.
    public private(set) var flushedCount = 0

    public init(sink: any ByteSink) {
        self.sink = sink
        self.capacity = Self.chunkSize + 1024
        self.base = .allocate(capacity: self.capacity)
        self.count = 0
    }

    deinit {
        self.base.deallocate()
    }

    @inlinable
    public mutating func append(_ byte: UInt8) {
        if self.count == self.capacity { self.grow(toHold: 1) }
        self.base[self.count] = byte
        self.count &+= 1
    }

    @inlinable
    public mutating func append(contentsOf bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress else { return }
        self.append(source, count: bytes.count)
    }

    @inlinable
    public mutating func append(contentsOf bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress else { return }
        self.append(source.assumingMemoryBound(to: UInt8.self), count: bytes.count)
    }

    @inlinable
    public mutating func append(contentsOf bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { self.append(contentsOf: $0) }
    }

    @inlinable
    public mutating func append<Bytes: Sequence<UInt8>>(contentsOf bytes: Bytes) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { self.append(contentsOf: $0) }
        if done == nil {
            for byte in bytes { self.append(byte) }
        }
    }

    @inlinable @inline(__always)
    public mutating func append(_ text: StaticString) {
        if text.hasPointerRepresentation {
            // A literal's length is a constant here, so the copy compiles to a few moves.
            self.append(text.utf8Start, count: text.utf8CodeUnitCount)
        } else {
            text.withUTF8Buffer { self.append(contentsOf: $0) }
        }
    }

    /// Appends `count` bytes from `source`.
    @inlinable @inline(__always)
    public mutating func append(_ source: UnsafePointer<UInt8>, count: Int) {
        if self.capacity &- self.count < count { self.grow(toHold: count) }
        Self.copy(count, from: source, to: self.base + self.count)
        self.count &+= count
    }

    /// Copies `count` bytes; up to 32 with two overlapping pairs of word moves (object keys,
    /// dates and numbers are that short), longer ones with `memcpy`.
    @inlinable @inline(__always)
    static func copy(_ count: Int, from source: UnsafePointer<UInt8>, to target: UnsafeMutablePointer<UInt8>) {
        let from = UnsafeRawPointer(source)
        let to = UnsafeMutableRawPointer(target)
        if count >= 8 && count <= 16 {
            let head = from.loadUnaligned(as: UInt64.self)
            let tail = from.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
            to.storeBytes(of: head, as: UInt64.self)
            to.storeBytes(of: tail, toByteOffset: count &- 8, as: UInt64.self)
        } else if count > 16 && count <= 32 {
            let head = from.loadUnaligned(as: SIMD16<UInt8>.self)
            let tail = from.loadUnaligned(fromByteOffset: count &- 16, as: SIMD16<UInt8>.self)
            to.storeBytes(of: head, as: SIMD16<UInt8>.self)
            to.storeBytes(of: tail, toByteOffset: count &- 16, as: SIMD16<UInt8>.self)
        } else {
            target.update(from: source, count: count)
        }
    }

    /// Appends `value` in decimal (a leading `-` when negative), in place.
    @inlinable
    public mutating func appendDecimal(_ value: Int64) {
        // At most 20 bytes: "-9223372036854775808".
        if self.capacity &- self.count < 20 { self.grow(toHold: 20) }
        var position = self.base + self.count
        if value < 0 {
            position.pointee = UInt8(ascii: "-")
            position += 1
        }
        self.count = DecimalDigits.write(value.magnitude, at: position) - self.base
    }

    /// Makes room for `extra` more bytes (a value larger than what is left of the chunk).
    @usableFromInline
    mutating func grow(toHold extra: Int) {
        let capacity = max(self.capacity * 2, self.count + extra)
        let base = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        base.moveInitialize(from: self.base, count: self.count)
        self.base.deallocate()
        self.base = base
        self.capacity = capacity
    }

    /// Hands the buffer to the sink if it holds a full chunk. Call between values.
    @inlinable
    public mutating func flushIfFull() throws {
        if self.count >= Self.chunkSize {
            try self.flush()
        }
    }

    @usableFromInline
    mutating func flush() throws {
        try self.sink.write(self.bufferedBytes)
        self.flushedCount += self.count
        self.count = 0
    }

    /// Hands the rest to the sink's `finish`. Call once, after the last byte.
    public mutating func finish() throws {
        try self.sink.finish(self.bufferedBytes)
        self.flushedCount += self.count
        self.count = 0
    }

    /// The bytes not yet handed to the sink, in place (valid until the next append).
    private var bufferedBytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: self.base, count: self.count)
    }

    public var totalCount: Int { self.flushedCount + self.count }
}
