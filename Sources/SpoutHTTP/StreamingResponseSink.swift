import NIOConcurrencyHelpers
import NIOCore
import SpoutCore

/// The ``ByteSink`` a row stream writes into: it hands chunks to the channel's event loop and
/// blocks the producing thread while the channel cannot take more (backpressure).
///
/// Contract (what both sides may rely on):
/// - The producer (a thread-pool thread) calls ``write(_:)`` and ``finish(_:)``; they block,
///   never on an event loop. Each ``write(_:)`` costs one event-loop hop; rows cost none.
/// - ``write(_:)`` waits while the channel is not writable or ``maximumChunksInFlight`` chunks
///   have been handed over and not yet written, so the bytes buffered in the process stay
///   bounded by the channel's high watermark plus that many chunks.
/// - The first ``write(_:)`` makes the event loop send the response head (chunked) before the
///   chunk. ``finish(_:)`` sends nothing: it records the rest of the body, which the
///   connection handler sends once the producer is done (whole, with `Content-Length`, when no
///   chunk was written before), so a failure after ``finish(_:)`` can still become an error.
/// - After ``close()`` (the channel went away) every call throws ``ChannelClosed``, a blocked
///   producer wakes up, and the cancellation handler (`lease.cancel()`) runs once.
///
/// `@unchecked Sendable`: every mutable field is read and written holding `lock`; the
/// loop-side callbacks only touch the connection handler through the hop onto its event loop.
public final class StreamingResponseSink: ByteSink, @unchecked Sendable {
    /// The channel closed before or while the body was written.
    public struct ChannelClosed: Error {}

    /// Delivers a chunk on the event loop; `isFirst` tells it to send the head before.
    typealias ChunkHandler = @Sendable (_ chunk: ByteBuffer, _ isFirst: Bool) -> Void

    let maximumChunksInFlight: Int
    /// The lock of the fields below. Its value says whether they changed since the producer
    /// last looked: the producer sets it false and waits for true, and every change on the
    /// event loop's side sets it true (NIO's `ConditionLock` broadcasts when it does).
    private let lock = NIOConcurrencyHelpers.ConditionLock(value: true)
    private let allocator: ByteBufferAllocator
    private let hop: LoopHop
    private let deliverChunk: ChunkHandler

    // Guarded by `lock`.
    private var isWritable = true
    private var chunksInFlight = 0
    private var isClosed = false
    private var chunkCount = 0
    private var byteCount = 0
    private var finishedRest: [UInt8]?
    private var waitingForWritability = false
    private var pauses = 0
    private var onClose: (@Sendable () -> Void)?

    init(allocator: ByteBufferAllocator, hop: LoopHop, maximumChunksInFlight: Int = 2, deliverChunk: @escaping ChunkHandler) {
        self.allocator = allocator
        self.hop = hop
        self.maximumChunksInFlight = max(1, maximumChunksInFlight)
        self.deliverChunk = deliverChunk
    }

    // MARK: Producer side

    public func write(_ chunk: [UInt8]) throws {
        let isFirst: Bool
        self.lock.lock()
        while !self.isClosed && (!self.isWritable || self.chunksInFlight >= self.maximumChunksInFlight) {
            let blockedByChannel = !self.isWritable
            if blockedByChannel && !self.waitingForWritability { self.pauses += 1 }
            self.waitingForWritability = blockedByChannel
            // Seen: wait for the next change.
            self.lock.unlock(withValue: false)
            self.lock.lock(whenValue: true)
        }
        self.waitingForWritability = false
        if self.isClosed {
            self.lock.unlock()
            throw ChannelClosed()
        }
        isFirst = self.chunkCount == 0
        self.chunkCount += 1
        self.byteCount += chunk.count
        self.chunksInFlight += 1
        self.lock.unlock()

        let buffer = self.allocator.buffer(bytes: chunk)
        let deliver = self.deliverChunk
        self.hop.execute { deliver(buffer, isFirst) }
    }

    public func finish(_ last: [UInt8]) throws {
        try self.withLock {
            if self.isClosed { throw ChannelClosed() }
            self.byteCount += last.count
            self.finishedRest = last
        }
    }

    // MARK: Event-loop side

    /// A chunk handed over by ``write(_:)`` has been written; `channelIsWritable` is the
    /// channel's writability after the write.
    func chunkWritten(channelIsWritable: Bool) {
        self.withLockSignalling {
            self.chunksInFlight -= 1
            self.isWritable = channelIsWritable
        }
    }

    /// The channel's writability changed (`channelWritabilityChanged`).
    func writabilityChanged(_ isWritable: Bool) {
        self.withLockSignalling {
            self.isWritable = isWritable
        }
    }

    /// The channel is gone: fail the producer's next call, wake it, and cancel its statement.
    func close() {
        let onClose: (@Sendable () -> Void)? = self.withLockSignalling {
            guard !self.isClosed else { return nil }
            self.isClosed = true
            defer { self.onClose = nil }
            return self.onClose
        }
        onClose?()
    }

    /// Runs `handler` when the sink is closed, or now if it already is. Replaces an earlier one.
    public func onClose(_ handler: @escaping @Sendable () -> Void) {
        let runNow: Bool = self.withLock {
            if self.isClosed { return true }
            self.onClose = handler
            return false
        }
        if runNow { handler() }
    }

    /// Forgets the close handler (the producer is done; the lease is released).
    public func clearOnClose() {
        self.withLock { self.onClose = nil }
    }

    /// Whether nothing was written and the channel is still there: another producer may
    /// still answer into this sink.
    public var isUntouched: Bool {
        self.withLock { self.byteCount == 0 && !self.isClosed }
    }

    // MARK: Locking

    /// Runs `body` holding the lock, leaving its value as it was.
    private func withLock<T>(_ body: () throws -> T) rethrows -> T {
        self.lock.lock()
        defer { self.lock.unlock() }
        return try body()
    }

    /// Runs `body` holding the lock, then marks the fields changed and wakes the producer.
    private func withLockSignalling<T>(_ body: () throws -> T) rethrows -> T {
        self.lock.lock()
        defer { self.lock.unlock(withValue: true) }
        return try body()
    }

    // MARK: State

    struct Snapshot: Sendable {
        /// Whether the head was handed over (at least one ``write(_:)``).
        var headSent: Bool
        var chunkCount: Int
        /// Body bytes produced, including the finished rest.
        var byteCount: Int
        /// The bytes given to ``finish(_:)``, once it was called.
        var finishedRest: [UInt8]?
        /// Whether the producer is blocked waiting for the channel to become writable.
        var isWaitingForWritability: Bool
        /// How many times the producer had to wait for writability.
        var pauses: Int
        var isClosed: Bool
    }

    var snapshot: Snapshot {
        self.withLock {
            Snapshot(
                headSent: self.chunkCount > 0, chunkCount: self.chunkCount, byteCount: self.byteCount,
                finishedRest: self.finishedRest, isWaitingForWritability: self.waitingForWritability,
                pauses: self.pauses, isClosed: self.isClosed
            )
        }
    }
}

/// How work gets onto a connection's event loop from another thread.
///
/// The server uses `eventLoop.execute`, and runs its request tasks on the event loop too
/// (``taskExecutor``); `EmbeddedChannel` tests queue the work and run it on the test thread,
/// since an `EmbeddedEventLoop` may only be used from its own thread, and leave the tasks on
/// the global executor.
struct LoopHop: Sendable {
    let execute: @Sendable (@escaping @Sendable () -> Void) -> Void
    /// Where the connection's request tasks run; nil: the global concurrent executor.
    var taskExecutor: (any TaskExecutor)? = nil

    static func eventLoop(_ eventLoop: any EventLoop) -> LoopHop {
        LoopHop(execute: { eventLoop.execute($0) }, taskExecutor: EventLoopTaskExecutor(eventLoop: eventLoop))
    }
}
