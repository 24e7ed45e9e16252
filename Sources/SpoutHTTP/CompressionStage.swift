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
/// `@unchecked Sendable`: every mutable field is guarded by `condition`, except the encoder,
/// which one thread uses at a time: the producer's until the compressor's thread starts (under
/// `condition`), then only the compressor's.
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

    /// How many uncompressed chunks may wait for the compressor.
    let maximumQueued: Int
    private let encoder: any StreamEncoder
    private let condition = NSCondition()

    // Guarded by `condition`.
    private weak var target: (any CompressedBodyTarget)?
    private var queued: [[UInt8]] = []
    private var last: [UInt8]?
    private var hasStarted = false
    private var hasInput = false
    /// The compressor's thread ended: finished, failed or cancelled.
    private var hasEnded = false
    private var failure: (any Error)?
    private var isCancelled = false

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
        self.maximumQueued = max(1, maximumQueued)
    }

    /// Sets where the compressed bytes go, before the first ``write(_:)``. Held weakly: a
    /// target that is gone takes no more (the compressor stops as if the channel closed).
    func attach(to target: any CompressedBodyTarget) {
        self.withLock { self.target = target }
    }

    /// Whether the compressor's thread has ended (finished, failed or cancelled).
    var hasStopped: Bool {
        self.withLock { self.hasEnded }
    }

    /// Whether the producer handed over any bytes yet.
    var tookInput: Bool {
        self.withLock { self.hasInput }
    }

    // MARK: Producer side

    /// Queues `chunk` for compression; starts the compressor's thread with the first.
    func write(_ chunk: [UInt8]) throws {
        self.condition.lock()
        while self.queued.count >= self.maximumQueued && !self.hasEnded && !self.isCancelled {
            self.condition.wait()
        }
        if let error = self.stopReason() {
            self.condition.unlock()
            throw error
        }
        self.queued.append(chunk)
        self.hasInput = true
        let start = !self.hasStarted
        self.hasStarted = true
        self.condition.broadcast()
        self.condition.unlock()
        if start {
            // The libraries keep their state on the heap.
            SpoutThread.start(named: "spout-compress", stackSize: 1 << 20) { self.compress() }
        }
    }

    /// Compresses `last` and ends the coding; returns once the target took the end.
    func finish(_ last: [UInt8]) throws {
        self.condition.lock()
        if let error = self.stopReason() {
            self.condition.unlock()
            throw error
        }
        if !self.hasStarted {
            // Nothing was written: no thread for a body this small.
            self.hasInput = self.hasInput || !last.isEmpty
            let target = self.target
            self.condition.unlock()
            guard let target else { throw StreamingResponseSink.ChannelClosed() }
            try target.finishCompressed(try self.encoder.finish(last))
            return
        }
        self.last = last
        self.condition.broadcast()
        while !self.hasEnded && !self.isCancelled {
            self.condition.wait()
        }
        let error = self.stopReason()
        self.condition.unlock()
        if let error { throw error }
    }

    /// Why the producer may not go on (holding the lock): the compressor's failure, or a
    /// cancelled stage. Nil while it may, and after a finish that went through.
    private func stopReason() -> (any Error)? {
        if let failure = self.failure { return failure }
        if self.isCancelled { return StreamingResponseSink.ChannelClosed() }
        return nil
    }

    // MARK: Any thread

    /// Stops the stage: the channel is gone. Wakes a waiting producer and the compressor.
    func cancel() {
        self.withLock {
            self.isCancelled = true
            self.queued = []
            self.condition.broadcast()
        }
    }

    // MARK: The compressor's thread

    private enum Work {
        case chunk([UInt8])
        /// Everything given so far, out to the target (the producer handed nothing more).
        case flush
        case last([UInt8])
    }

    private func compress() {
        #if os(Linux)
        // Bulk work: when the cores are busy, the event loops and the database threads (small
        // requests) go first. On Linux, nice(2) changes the calling thread's nice value only.
        _ = nice(Self.niceness)
        #endif
        // Whether the encoder may hold bytes of chunks it took (compressed without a flush).
        var holdsInput = false
        while true {
            self.condition.lock()
            if holdsInput {
                // Out of input: give the producer a moment to hand the next chunk before
                // flushing, so that a producer as fast as the compressor does not cost a flush
                // per chunk.
                let deadline = Date(timeIntervalSinceNow: Self.flushDelay)
                while self.queued.isEmpty && self.last == nil && !self.isCancelled && self.condition.wait(until: deadline) {}
            }
            let work: Work
            if holdsInput && self.queued.isEmpty && self.last == nil && !self.isCancelled {
                work = .flush
            } else {
                while self.queued.isEmpty && self.last == nil && !self.isCancelled {
                    self.condition.wait()
                }
                if self.isCancelled {
                    self.end(failure: nil)
                    return
                }
                work = self.queued.isEmpty ? .last(self.last ?? []) : .chunk(self.queued.removeFirst())
            }
            let target = self.target
            self.condition.broadcast()
            self.condition.unlock()
            do {
                guard let target else { throw StreamingResponseSink.ChannelClosed() }
                switch work {
                case .chunk(let chunk):
                    let compressed = try self.encoder.encode(chunk, flush: false)
                    holdsInput = true
                    if !compressed.isEmpty { try target.deliverCompressed(compressed) }
                case .flush:
                    let compressed = try self.encoder.encode([], flush: true)
                    holdsInput = false
                    if !compressed.isEmpty { try target.deliverCompressed(compressed) }
                case .last(let last):
                    try target.finishCompressed(try self.encoder.finish(last))
                    self.condition.lock()
                    self.end(failure: nil)
                    return
                }
            } catch {
                self.condition.lock()
                self.end(failure: error)
                return
            }
        }
    }

    /// Marks the compressor's thread ended (holding the lock; releases it).
    private func end(failure: (any Error)?) {
        if self.failure == nil { self.failure = failure }
        self.hasEnded = true
        self.queued = []
        self.condition.broadcast()
        self.condition.unlock()
    }

    private func withLock<T>(_ body: () throws -> T) rethrows -> T {
        self.condition.lock()
        defer { self.condition.unlock() }
        return try body()
    }
}
