/// Where encoders write their output, one bounded chunk at a time.
///
/// Contract: ``write(_:)`` is called with each full chunk (about ``ChunkedOutput/chunkSize``
/// bytes) as the encoder produces it, and may block until the consumer can take more
/// (backpressure); it throws when the consumer is gone, which stops the producer. After the
/// last row, ``finish(_:)`` is called exactly once with the remaining bytes (possibly empty).
/// When an error stops the stream, ``finish(_:)`` is not called. A sink that sees
/// ``finish(_:)`` before any ``write(_:)`` knows the whole body and its length.
///
/// The bytes passed to either call are the encoder's own buffer, valid only until the call
/// returns: a sink that keeps them copies them, once, into whatever it keeps (a sink for a
/// socket into the channel's buffer, a file sink not at all).
public protocol ByteSink: AnyObject {
    func write(_ chunk: UnsafeRawBufferPointer) throws
    func finish(_ last: UnsafeRawBufferPointer) throws
}

extension ByteSink {
    /// ``write(_:)-(UnsafeRawBufferPointer)`` for the bytes of an array.
    public func write(_ chunk: [UInt8]) throws {
        try chunk.withUnsafeBytes { try self.write($0) }
    }

    /// ``finish(_:)-(UnsafeRawBufferPointer)`` for the bytes of an array.
    public func finish(_ last: [UInt8]) throws {
        try last.withUnsafeBytes { try self.finish($0) }
    }
}

/// A sink that collects everything in memory. For tests and small results only.
public final class CollectingSink: ByteSink {
    public private(set) var bytes: [UInt8] = []
    /// How many times ``write(_:)`` was called (full chunks).
    public private(set) var chunkCount = 0
    public private(set) var isFinished = false

    public init() {}

    public func write(_ chunk: UnsafeRawBufferPointer) throws {
        self.bytes.append(contentsOf: chunk)
        self.chunkCount += 1
    }

    public func finish(_ last: UnsafeRawBufferPointer) throws {
        self.bytes.append(contentsOf: last)
        self.isFinished = true
    }

    /// The collected bytes as UTF-8 text.
    public var text: String { String(decoding: self.bytes, as: UTF8.self) }
}
