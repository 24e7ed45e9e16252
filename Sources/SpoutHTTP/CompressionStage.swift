import Foundation
import SpoutCore

/// Where a ``CompressionStage`` puts what it compressed: the stream's sink.
protocol CompressedBodyTarget: AnyObject, Sendable {
    /// Takes compressed bytes for the body, in order; may block (backpressure) and throws when
    /// the body can take no more (the channel closed).
    func deliverCompressed(_ bytes: [UInt8]) throws
    /// Takes the last compressed bytes, the coding's end included.
    func finishCompressed(_ bytes: [UInt8]) throws
}

/// Compresses one streamed body on a thread of its own, beside the producer that encodes its
/// rows (issue #31). Producer and compressor in series on one thread made a compressed stream
/// take the sum of both times; side by side it takes about the longer of the two.
///
/// Contract (what the producer and the target may rely on):
/// - One producer calls ``write(_:)`` for each chunk and ``finish(_:)`` once, or stops calling
///   after an error. ``write(_:)`` returns once the chunk is queued; it waits while
///   ``maximumQueued`` chunks are queued (backpressure: the compressor waits for the target,
///   the producer for the compressor). Uncompressed bytes held: at most ``maximumQueued``
///   chunks and the one being compressed.
/// - The compressor's thread starts at the first ``write(_:)``: a body given only to
///   ``finish(_:)`` (a small one) is compressed on the producer's thread, with no thread.
/// - The target gets the compressed bytes in order, from one thread at a time.
/// - The compressor flushes once it has compressed every chunk it was given and no next one
///   came within ``flushDelay``: what the target has then decodes to everything written so
///   far, so a row handed over waits for compression at most that long after the producer
///   stops. While the producer keeps up, chunks are compressed without a flush (flushing
///   every 32 KiB chunk costs zstd a third of its time).
/// - ``finish(_:)`` returns once the target took the last bytes: a producer that returned
///   from it has handed over the whole body.
/// - The first error (the target's, say the channel closed, or the library's) stops the
///   compressor, and the producer's next call throws it. After ``cancel()`` (the channel went
///   away) both stop: a waiting producer wakes and throws
///   ``StreamingResponseSink/ChannelClosed``, queued chunks are dropped, the thread ends.
///
/// Every decision is made by a ``CompressionStateMachine`` under the stage's lock; the stage
/// performs what it decides (starts the thread, compresses, hands bytes to the target, waits)
/// and, for the waits, keeps the clock.
///
/// `@unchecked Sendable`: its mutable fields, the machine and the target, are guarded by
/// `condition`, except the encoder, which one thread uses at a time: the producer's for a body
/// coded whole (the machine then starts no compressor), else only the compressor's.
final class CompressionStage: @unchecked Sendable {
    /// How much lower the compressor thread's priority is than the process's (its nice value
    /// is raised by this much, on Linux): with 4 compressed streams on two busy cores, a small
    /// request's p99 went from 12.6 to 8.7 ms (gzip), a single stream's time unchanged.
    static let niceness: Int32 = 10

    /// How long the compressor, out of input, waits for the producer's next chunk before it
    /// flushes (seconds). A producer that writes rows faster than they compress hands a
    /// chunk well within it, and its chunks are compressed without flushes; a producer that
    /// waits for its database gets what it wrote to the client this much later.
    static let flushDelay: TimeInterval = 0.002

    private let encoder: any StreamEncoder
    private let condition = NSCondition()
    /// Every decision; guarded by `condition`.
    private var machine: CompressionStateMachine
    /// Guarded by `condition`.
    private weak var target: (any CompressedBodyTarget)?

    /// How many uncompressed chunks may wait for the compressor.
    var maximumQueued: Int { self.machine.maximumQueued }

    /// How many uncompressed chunks may wait for the compressor unless told otherwise: four of
    /// the encoders' 32 KiB (`ChunkedOutput`), 128 KiB, the largest block zstd compresses at
    /// once (`ZSTD_BLOCKSIZE_MAX`). zstd takes a block's bytes before it compresses them; with
    /// two chunks queued the producer waited while the compressor gathered each block, and a
    /// SQLite `/salaries` download with zstd took 1.16 × the plain one; with four the producer
    /// fills the next block while one is compressed (0.92 ×; Benchmarks/results/history.md,
    /// 2026-11-28).
    static let defaultMaximumQueued = 4

    init(encoder: any StreamEncoder, maximumQueued: Int = CompressionStage.defaultMaximumQueued) {
        self.encoder = encoder
        self.machine = CompressionStateMachine(maximumQueued: maximumQueued)
    }

    /// Sets where the compressed bytes go, before the first ``write(_:)``. Held weakly: a
    /// target that is gone takes no more (the compressor stops as if the channel closed).
    func attach(to target: any CompressedBodyTarget) {
        self.withLock { self.target = target }
    }

    /// Whether the compressor's thread has ended (finished, failed or cancelled).
    var hasStopped: Bool {
        self.withLock { self.machine.hasStopped }
    }

    /// Whether the producer handed over any bytes yet.
    var tookInput: Bool {
        self.withLock { self.machine.bytesTaken > 0 }
    }

    // MARK: Producer side

    /// Queues `chunk` for compression; starts the compressor's thread with the first.
    func write(_ chunk: [UInt8]) throws {
        self.condition.lock()
        while true {
            switch self.machine.write(chunk) {
            case .fail(let error):
                self.condition.unlock()
                throw error
            case .wait:
                self.condition.wait()
            case .queued(let startCompressor):
                self.condition.broadcast()
                self.condition.unlock()
                if startCompressor {
                    // The libraries keep their state on the heap.
                    SpoutThread.start(named: "spout-compress", stackSize: 1 << 20) { self.compress() }
                }
                return
            }
        }
    }

    /// Compresses `last` and ends the coding; returns once the target took the end.
    func finish(_ last: [UInt8]) throws {
        self.condition.lock()
        var action = self.machine.finish(last)
        // The compressor may wait for the last bytes.
        self.condition.broadcast()
        while true {
            switch action {
            case .fail(let error):
                self.condition.unlock()
                throw error
            case .codeHere(let last):
                let target = self.target
                self.condition.unlock()
                guard let target else { throw StreamingResponseSink.ChannelClosed() }
                try target.finishCompressed(try self.encoder.finish(last))
                return
            case .wait:
                self.condition.wait()
                action = self.machine.endAwaited()
            case .done:
                self.condition.unlock()
                return
            }
        }
    }

    // MARK: Any thread

    /// Stops the stage: the channel is gone. Wakes a waiting producer and the compressor.
    func cancel() {
        self.withLock {
            self.machine.cancel()
            self.condition.broadcast()
        }
    }

    // MARK: The compressor's thread

    private func compress() {
        #if os(Linux)
        // Bulk work: when the cores are busy, the event loops and the database threads (small
        // requests) go first. On Linux, nice(2) changes the calling thread's nice value only.
        _ = nice(Self.niceness)
        #endif
        // When the compressor flushes if no chunk comes first; kept across wake-ups that
        // bring no work, so they do not put the flush off.
        var flushDeadline: Date?
        self.condition.lock()
        while true {
            let action = self.machine.nextWork()
            if case .wait(let flushAfterDelay) = action {
                if flushAfterDelay {
                    let deadline = flushDeadline ?? Date(timeIntervalSinceNow: Self.flushDelay)
                    flushDeadline = deadline
                    if !self.condition.wait(until: deadline) { self.machine.flushDelayElapsed() }
                } else {
                    self.condition.wait()
                }
                continue
            }
            if case .stop = action {
                self.condition.unlock()
                return
            }
            flushDeadline = nil
            let target = self.target
            // The producer may wait for room, or for the end.
            self.condition.broadcast()
            self.condition.unlock()
            do {
                guard let target else { throw StreamingResponseSink.ChannelClosed() }
                switch action {
                case .compress(let chunk):
                    let compressed = try self.encoder.encode(chunk, flush: false)
                    if !compressed.isEmpty { try target.deliverCompressed(compressed) }
                case .flush:
                    let compressed = try self.encoder.encode([], flush: true)
                    if !compressed.isEmpty { try target.deliverCompressed(compressed) }
                case .codeEnd(let last):
                    try target.finishCompressed(try self.encoder.finish(last))
                    self.condition.lock()
                    self.machine.codingEnded()
                    self.condition.broadcast()
                    self.condition.unlock()
                    return
                case .wait, .stop:
                    preconditionFailure("handled above")
                }
            } catch {
                self.condition.lock()
                self.machine.compressorFailed(error)
                self.condition.broadcast()
                self.condition.unlock()
                return
            }
            self.condition.lock()
        }
    }

    private func withLock<T>(_ body: () throws -> T) rethrows -> T {
        self.condition.lock()
        defer { self.condition.unlock() }
        return try body()
    }
}
