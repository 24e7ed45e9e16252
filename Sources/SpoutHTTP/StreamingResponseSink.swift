import Logging
import NIOConcurrencyHelpers
import NIOCore
import SpoutCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The ``ByteSink`` a row stream writes into: it hands chunks to the channel's event loop and,
/// when the client reads slower than the producer writes, spools them (memory, then an
/// unnamed file) so the producer, and the database connection it holds, finishes at the
/// database's speed. Without a spool, or when the spool may not grow, it blocks the producer
/// while the channel cannot take more (backpressure).
///
/// Contract (what both sides may rely on):
/// - The producer (a thread that may block: a database thread, the spool's feeder) calls
///   ``write(_:)`` and ``finish(_:)``; they may block, never on an event loop. A chunk the
///   channel can take now costs one event-loop hop; rows cost none.
/// - Chunks reach the channel in the order written, whole or spooled. A chunk is handed over
///   at once while the channel is writable, fewer than `maximumChunksInFlight` (at least one)
///   are on their way, and nothing is spooled; otherwise it is queued in memory (up to
///   ``SpoolConfiguration/memoryBytesPerStream``), then appended to the spool file (within
///   the per-stream and total caps). When neither may take it (no spool, a cap, or the disk
///   refused a write), ``write(_:)`` waits for the client: the bytes buffered in the process
///   stay bounded by the channel's high watermark, the memory spool and the chunks in flight.
/// - The event loop sends the response head before the first chunk it writes. ``finish(_:)``
///   sends nothing: it records the rest of the body, which the connection handler sends once
///   the producer is done and everything spooled was written (``whenDrained(_:)``); a body that
///   wrote no chunk is sent whole, with `Content-Length`.
/// - After ``close()`` (the channel went away) every call throws ``ChannelClosed``, a blocked
///   producer wakes up, the spool is dropped (its file closes, having no name) and the close
///   handler (`lease.cancel()`) runs once.
/// - A compressed body goes through a ``CompressionStage`` first: ``write(_:)`` queues the
///   chunk for the stage's thread, which compresses it and hands it over as above (so that
///   thread, not the producer, waits for the channel or the spool); ``finish(_:)`` returns once
///   the coding's end is recorded. Everything above then applies to the compressed bytes.
///
/// Every decision is made by a ``StreamingResponseStateMachine`` under the sink's lock; the
/// sink performs what it decides (hops, file writes and reads, callbacks) outside the lock.
///
/// `@unchecked Sendable`: its one mutable field, the machine, is read and written holding
/// `lock`; the loop-side methods run on the channel's event loop, and reach the connection
/// handler only there (through the hop).
public final class StreamingResponseSink: ByteSink, CompressedBodyTarget, @unchecked Sendable {
    /// The channel closed before or while the body was written.
    public struct ChannelClosed: Error {}

    /// Delivers a chunk on the event loop; `isFirst` tells it to send the head before.
    typealias ChunkHandler = @Sendable (_ chunk: ByteBuffer, _ isFirst: Bool) -> Void

    /// Bytes read back from the spool file at a time.
    static let spoolReadSize = 64 * 1024

    /// The lock of ``machine``. Its value says whether the machine changed since the producer
    /// last looked: the producer sets it false and waits for true, and every change on the
    /// event loop's side sets it true (NIO's `ConditionLock` broadcasts when it does).
    private let lock = NIOConcurrencyHelpers.ConditionLock(value: true)
    /// Every decision: guarded by `lock`.
    private var machine: StreamingResponseStateMachine<SpoolFile>
    private let allocator: ByteBufferAllocator
    private let hop: LoopHop
    private let deliverChunk: ChunkHandler
    private let spool: SpoolService?
    private let requestID: String
    /// Compresses what the producer writes, on a thread of its own, before anything else sees
    /// it (``ContentCoding``); nil for an identity body.
    let compression: CompressionStage?

    init(
        allocator: ByteBufferAllocator, hop: LoopHop, maximumChunksInFlight: Int = 2, spool: SpoolService? = nil,
        requestID: String = "-", encoder: (any StreamEncoder)? = nil, deliverChunk: @escaping ChunkHandler
    ) {
        self.compression = encoder.map { CompressionStage(encoder: $0) }
        self.allocator = allocator
        self.hop = hop
        let spool = spool?.configuration.isEnabled == true ? spool : nil
        self.spool = spool
        self.machine = StreamingResponseStateMachine(
            maximumChunksInFlight: maximumChunksInFlight,
            spool: spool.map {
                .init(memoryBytesPerStream: $0.configuration.memoryBytesPerStream, maximumBytesPerStream: $0.configuration.maximumBytesPerStream)
            })
        self.requestID = requestID
        self.deliverChunk = deliverChunk
        self.compression?.attach(to: self)
    }

    deinit {
        self.compression?.cancel()
    }

    // MARK: Producer side

    /// Copies `chunk` once: into the channel's buffer, or for a compressed body into the
    /// compression stage's queue.
    public func write(_ chunk: UnsafeRawBufferPointer) throws {
        guard !chunk.isEmpty else { return }
        if let compression = self.compression {
            try compression.write(Array(chunk))
        } else {
            try self.hand(self.allocator.buffer(bytes: chunk))
        }
    }

    public func finish(_ last: UnsafeRawBufferPointer) throws {
        if let compression = self.compression {
            try compression.finish(Array(last))
        } else {
            try self.record(Array(last))
        }
    }

    func deliverCompressed(_ bytes: [UInt8]) throws {
        try self.hand(self.allocator.buffer(bytes: bytes))
    }

    func finishCompressed(_ bytes: [UInt8]) throws {
        try self.record(bytes)
    }

    /// Hands a chunk of the body (compressed, if it is) to the channel or the spool, or waits.
    private func hand(_ chunk: ByteBuffer) throws {
        guard chunk.readableBytes > 0 else { return }
        self.lock.lock()
        var action = self.decide(chunk)
        while true {
            switch action {
            case .fail(let release):
                self.lock.unlock(withValue: true)
                self.give(release)
                throw ChannelClosed()
            case .deliver(let chunk, let isFirst):
                self.lock.unlock()
                let deliver = self.deliverChunk
                self.hop.execute { deliver(chunk, isFirst) }
                return
            case .queued(let bytes, let schedulePump):
                self.lock.unlock(withValue: true)
                self.spool?.memoryChanged(by: bytes)
                if schedulePump { self.hop.execute { self.pump() } }
                return
            case .writeFile(let write):
                self.lock.unlock()
                guard let next = try self.writeFile(chunk, write) else { return }
                action = next
            case .wait(let firstHold):
                if firstHold, let spool = self.spool {
                    spool.metrics?.held.increment()
                    spool.logger.notice(
                        "stream holds its database connection: the spool may not grow",
                        metadata: ["request.id": "\(self.requestID)", "spool.disk_failed": "\(self.machine.diskFailed)"])
                }
                // Seen: wait for the next change.
                self.lock.unlock(withValue: false)
                self.lock.lock(whenValue: true)
                self.machine.waitEnded()
                action = self.decide(chunk)
            }
        }
    }

    /// Where `chunk` goes now (holding the lock): the machine's decision, with the spool's
    /// shared disk budget.
    private func decide(_ chunk: ByteBuffer) -> StreamingResponseStateMachine<SpoolFile>.WriteAction {
        self.machine.write(chunk) { self.spool?.reserveDisk($0) ?? false }
    }

    /// Makes `write` (outside the lock), then takes the lock and returns the producer's next
    /// action, or nil (releasing the lock) when the chunk is spooled.
    private func writeFile(_ chunk: ByteBuffer, _ write: StreamingResponseStateMachine<SpoolFile>.FileWrite) throws -> StreamingResponseStateMachine<SpoolFile>.WriteAction? {
        guard let spool = self.spool else { preconditionFailure("a spool file without a spool") }
        spool.releaseDisk(write.releasedDisk)
        if write.truncate { write.file?.truncate() }
        guard write.append else {
            self.lock.lock()
            return self.machine.truncated()
        }
        var failure: SpoolFile.Failure?
        var created: SpoolFile?
        do throws(SpoolFile.Failure) {
            let file: SpoolFile
            if let existing = write.file {
                file = existing
            } else {
                file = try SpoolFile.create(in: spool.configuration.resolvedDirectory)
                created = file
            }
            try file.write(chunk, at: write.offset)
        } catch {
            failure = error
        }
        if created != nil { spool.metrics?.spooled.increment() }
        if let failure {
            spool.releaseDisk(chunk.readableBytes)
            spool.logger.warning(
                "stream cannot spool to disk; it holds its database connection instead",
                metadata: ["request.id": "\(self.requestID)", "error": "\(failure)"])
        }
        self.lock.lock()
        switch self.machine.fileWriteEnded(count: chunk.readableBytes, created: created, failed: failure != nil) {
        case .written(let schedulePump):
            self.lock.unlock(withValue: true)
            if schedulePump { self.hop.execute { self.pump() } }
            return nil
        case .refused:
            return self.decide(chunk)
        case .fail(let release, _):
            return .fail(release)
        }
    }

    /// Hands `bytes` to the channel now if it can take them, never waiting: for an event
    /// stream, whose producer serves many streams and keeps what it could not send (a sink
    /// made without a spool or a coding: ``ResponseExchange/startEventStream(headers:)``).
    /// Returns false, taking nothing, while the channel cannot take them; `whenWritable` then
    /// runs once (on the event loop) when it can again. Throws ``ChannelClosed`` after
    /// ``close()``.
    public func offer(_ bytes: [UInt8], whenWritable: @escaping @Sendable () -> Void) throws -> Bool {
        precondition(self.spool == nil && self.compression == nil, "offer(_:whenWritable:) needs a sink without a spool or a coding")
        let offered = self.withLock { self.machine.offer(count: bytes.count, whenWritable: whenWritable) }
        guard let offered else { throw ChannelClosed() }
        guard offered.delivered else { return false }
        let chunk = self.allocator.buffer(bytes: bytes)
        let deliver = self.deliverChunk
        self.hop.execute { deliver(chunk, offered.isFirst) }
        return true
    }

    /// Records the rest of the body, which the connection handler sends.
    private func record(_ last: [UInt8]) throws {
        guard self.withLock({ self.machine.finish(last) }) else { throw ChannelClosed() }
    }

    // MARK: Event-loop side

    /// Hands spooled chunks to the channel while it can take them, and starts reading the
    /// spool file when memory is empty. On the event loop.
    func pump() {
        self.lock.lock()
        guard self.machine.pumpStarted() else {
            self.lock.unlock()
            return
        }
        while true {
            switch self.machine.nextPumpStep() {
            case .deliver(let chunk, let isFirst, let bytes):
                self.lock.unlock(withValue: true)
                self.spool?.memoryChanged(by: -bytes)
                self.deliverChunk(chunk, isFirst)
                self.lock.lock()
            case .finish(let read, let drained):
                self.lock.unlock(withValue: true)
                if let read { self.read(read) }
                if let drained { self.run(drained) }
                return
            }
        }
    }

    /// Reads `read` back from the spool file on the spool's threads, then hands it over on
    /// the event loop.
    private func read(_ read: StreamingResponseStateMachine<SpoolFile>.FileRead) {
        guard let spool = self.spool else { preconditionFailure("a spool file without a spool") }
        spool.io.submit { state in
            let result: Result<ByteBuffer, SpoolFile.Failure>
            if case .active = state {
                result = Result { () throws(SpoolFile.Failure) in
                    try read.file.read(count: read.count, at: read.offset, allocator: self.allocator)
                }
            } else {
                result = .failure(SpoolFile.Failure(operation: "read the spool file (shutting down)", code: EINTR))
            }
            self.hop.execute { self.fileRead(result) }
        }
    }

    /// A read of the spool file finished. On the event loop.
    private func fileRead(_ result: Result<ByteBuffer, SpoolFile.Failure>) {
        let chunk = try? result.get()
        let action = self.withLockSignalling { self.machine.fileReadEnded(chunk) }
        switch action {
        case .none:
            return
        case .deliver(let chunk, let isFirst):
            self.deliverChunk(chunk, isFirst)
            self.withLock { self.machine.readDelivered() }
            self.pump()
        case .lost(let drained):
            if case .failure(let failure) = result {
                // The rest of the body is lost: the connection handler cuts the response short.
                self.spool?.logger.error(
                    "spool file unreadable; response cut short", metadata: ["request.id": "\(self.requestID)", "error": "\(failure)"])
            }
            if let drained { self.run(drained) }
            // A producer still running stops (and cancels its statement).
            self.close()
        }
    }

    /// A chunk handed over by ``write(_:)`` or the pump has been written; `channelIsWritable` is
    /// the channel's writability after the write.
    func chunkWritten(channelIsWritable: Bool) {
        let writable = self.withLockSignalling { self.machine.chunkWritten(channelIsWritable: channelIsWritable) }
        self.pump()
        writable?()
    }

    /// The channel's writability changed (`channelWritabilityChanged`).
    func writabilityChanged(_ isWritable: Bool) {
        let writable = self.withLockSignalling { self.machine.writabilityChanged(isWritable) }
        if isWritable { self.pump() }
        writable?()
    }

    /// Runs `action` on the event loop once every chunk written so far has been handed to the
    /// channel (now, if nothing is spooled), with `complete` true; with false when the spool
    /// lost part of the body (the response must be cut short). Never when the channel closed
    /// first. Call on the event loop, after the producer is done.
    func whenDrained(_ action: @escaping @Sendable (_ complete: Bool) -> Void) {
        let drained = self.withLock { self.machine.whenDrained(action) }
        if let drained { self.run(drained) }
    }

    private func run(_ drained: StreamingResponseStateMachine<SpoolFile>.Drained) {
        self.give(drained.release)
        drained.callback(drained.complete)
    }

    /// Gives spooled bytes back to the spool's budgets.
    private func give(_ release: StreamingResponseStateMachine<SpoolFile>.SpoolRelease) {
        guard let spool = self.spool else { return }
        spool.memoryChanged(by: -release.memoryBytes)
        spool.releaseDisk(release.diskBytes)
    }

    /// The channel is gone: fail the producer's next call, wake it, drop the spool, and cancel
    /// its statement.
    func close() {
        let closed = self.withLockSignalling { self.machine.close() }
        guard let closed else { return }
        self.give(closed.release)
        self.compression?.cancel()
        closed.onClose?()
    }

    /// Runs `handler` when the sink is closed, or now if it already is. Replaces an earlier one.
    public func onClose(_ handler: @escaping @Sendable () -> Void) {
        if !self.withLock({ self.machine.setOnClose(handler) }) { handler() }
    }

    /// Forgets the close handler (the producer is done; the lease is released).
    public func clearOnClose() {
        _ = self.withLock { self.machine.setOnClose(nil) }
    }

    /// Whether nothing was written and the channel is still there: another producer may
    /// still answer into this sink.
    public var isUntouched: Bool {
        self.withLock { self.machine.isUntouched } && !(self.compression?.tookInput ?? false)
    }

    // MARK: Locking

    /// Runs `body` holding the lock, leaving its value as it was.
    private func withLock<T>(_ body: () throws -> T) rethrows -> T {
        self.lock.lock()
        defer { self.lock.unlock() }
        return try body()
    }

    /// Runs `body` holding the lock, then marks the machine changed and wakes the producer.
    private func withLockSignalling<T>(_ body: () throws -> T) rethrows -> T {
        self.lock.lock()
        defer { self.lock.unlock(withValue: true) }
        return try body()
    }

    // MARK: State

    struct Snapshot: Sendable {
        /// Whether the producer wrote at least one chunk (the body is chunked).
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
        /// Bytes spooled and not yet handed to the channel (memory and file).
        var spooledBytes: Int
        /// Whether this stream ever spooled to disk.
        var usedFile: Bool
    }

    var snapshot: Snapshot {
        self.withLock {
            Snapshot(
                headSent: self.machine.chunkCount > 0, chunkCount: self.machine.chunkCount,
                byteCount: self.machine.byteCount, finishedRest: self.machine.finishedRest,
                isWaitingForWritability: self.machine.isWaitingForWritability, pauses: self.machine.pauses,
                isClosed: self.machine.isClosed, spooledBytes: self.machine.spooledBytes, usedFile: self.machine.filesCreated > 0
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
