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
///   at once while the channel is writable, fewer than ``maximumChunksInFlight`` chunks are
///   on their way, and nothing is spooled; otherwise it is queued in memory (up to
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
/// `@unchecked Sendable`: every mutable field is read and written holding `lock`; the
/// loop-side methods run on the channel's event loop, and reach the connection handler only
/// there (through the hop).
public final class StreamingResponseSink: ByteSink, CompressedBodyTarget, @unchecked Sendable {
    /// The channel closed before or while the body was written.
    public struct ChannelClosed: Error {}

    /// Delivers a chunk on the event loop; `isFirst` tells it to send the head before.
    typealias ChunkHandler = @Sendable (_ chunk: ByteBuffer, _ isFirst: Bool) -> Void

    /// Bytes read back from the spool file at a time.
    static let spoolReadSize = 64 * 1024

    let maximumChunksInFlight: Int
    /// The lock of the fields below. Its value says whether they changed since the producer
    /// last looked: the producer sets it false and waits for true, and every change on the
    /// event loop's side sets it true (NIO's `ConditionLock` broadcasts when it does).
    private let lock = NIOConcurrencyHelpers.ConditionLock(value: true)
    private let allocator: ByteBufferAllocator
    private let hop: LoopHop
    private let deliverChunk: ChunkHandler
    private let spool: SpoolService?
    private let requestID: String
    /// Compresses what the producer writes, on a thread of its own, before anything else sees
    /// it (``ContentCoding``); nil for an identity body.
    let compression: CompressionStage?

    // Guarded by `lock`.
    private var isWritable = true
    private var chunksInFlight = 0
    private var isClosed = false
    private var chunkCount = 0
    private var deliveredCount = 0
    private var byteCount = 0
    private var finishedRest: [UInt8]?
    private var waitingForWritability = false
    private var pauses = 0
    private var onClose: (@Sendable () -> Void)?
    /// The memory spool: chunks written, not yet handed to the channel, in order. Only filled
    /// while the file spool is empty, so it always comes first.
    private var queued: [ByteBuffer] = []
    private var queuedBytes = 0
    private var file: SpoolFile?
    /// The file's readable bytes are `fileStart..<fileEnd`; `fileReserved` of the disk budget
    /// is this stream's.
    private var fileStart = 0
    private var fileEnd = 0
    private var fileReserved = 0
    private var isReadingFile = false
    /// The producer is writing the file (outside the lock).
    private var isWritingFile = false
    /// The disk refused a write: this stream spools no more to disk.
    private var diskFailed = false
    private var hasHeld = false
    private var isPumping = false
    private var pumpScheduled = false
    private var whenDrained: (@Sendable (_ complete: Bool) -> Void)?
    /// The spool file could not be read back: the body cannot be completed.
    private var spoolFailed = false
    /// Runs once the channel can take a chunk again, after ``offer(_:whenWritable:)`` was refused.
    private var onWritable: (@Sendable () -> Void)?

    init(
        allocator: ByteBufferAllocator, hop: LoopHop, maximumChunksInFlight: Int = 2, spool: SpoolService? = nil,
        requestID: String = "-", encoder: (any StreamEncoder)? = nil, deliverChunk: @escaping ChunkHandler
    ) {
        self.compression = encoder.map { CompressionStage(encoder: $0) }
        self.allocator = allocator
        self.hop = hop
        self.maximumChunksInFlight = max(1, maximumChunksInFlight)
        self.spool = spool?.configuration.isEnabled == true ? spool : nil
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
        while true {
            if self.isClosed {
                self.lock.unlock()
                throw ChannelClosed()
            }
            guard let spool = self.spool else {
                // No spool: hand the chunk over now, or wait for the channel.
                if self.isWritable && self.chunksInFlight < self.maximumChunksInFlight {
                    self.handOverNow(chunk)
                    return
                }
                self.waitForChange()
                continue
            }
            // With a spool every chunk goes through the queue (a move, not a copy), so the
            // event loop hands them over in order; a client that keeps up keeps it near empty.
            let fileIsEmpty = self.fileStart == self.fileEnd && !self.isReadingFile && !self.isWritingFile
            if fileIsEmpty && (self.queued.isEmpty || self.queuedBytes + chunk.readableBytes <= spool.configuration.memoryBytesPerStream) {
                self.accept(chunk)
                self.queued.append(chunk)
                self.queuedBytes += chunk.readableBytes
                let pump = self.claimPump()
                self.lock.unlock(withValue: true)
                spool.memoryChanged(by: chunk.readableBytes)
                if pump { self.hop.execute { self.pump() } }
                return
            }
            // Disk only for a client that is behind (its socket is full), not for an event loop
            // that is merely busy: then the producer waits a moment, as without a spool.
            let clientIsBehind = !self.isWritable || !fileIsEmpty
            if clientIsBehind, !self.diskFailed, !self.isWritingFile,
                let written = try self.spoolToFile(chunk, spool: spool, fileIsEmpty: fileIsEmpty)
            {
                if written { return }
                continue
            }
            if clientIsBehind && !self.hasHeld {
                self.hasHeld = true
                spool.metrics?.held.increment()
                spool.logger.notice(
                    "stream holds its database connection: the spool may not grow",
                    metadata: ["request.id": "\(self.requestID)", "spool.disk_failed": "\(self.diskFailed)"])
            }
            self.waitForChange()
        }
    }

    /// Waits (holding the lock on entry and exit) until the event loop's side changes something.
    private func waitForChange() {
        let blockedByChannel = !self.isWritable
        if blockedByChannel && !self.waitingForWritability { self.pauses += 1 }
        self.waitingForWritability = blockedByChannel
        // Seen: wait for the next change.
        self.lock.unlock(withValue: false)
        self.lock.lock(whenValue: true)
        self.waitingForWritability = false
    }

    /// Counts a chunk the stream accepted (holding the lock).
    private func accept(_ chunk: ByteBuffer) {
        self.chunkCount += 1
        self.byteCount += chunk.readableBytes
    }

    /// Appends `chunk` to the spool file, holding the lock on entry and, when it returns nil
    /// or false, on exit. True: written (the lock is released). False: the file changed while
    /// writing failed; look again. Nil: the file may not take it (a cap); hold.
    private func spoolToFile(_ chunk: ByteBuffer, spool: SpoolService, fileIsEmpty: Bool) throws -> Bool? {
        let configuration = spool.configuration
        let startOver = fileIsEmpty && self.fileEnd > 0
        if startOver {
            // The client caught up: start the file over, giving its blocks back.
            spool.releaseDisk(self.fileReserved)
            self.fileReserved = 0
            self.fileStart = 0
            self.fileEnd = 0
        }
        let fits = self.fileEnd + chunk.readableBytes <= configuration.maximumBytesPerStream && spool.reserveDisk(chunk.readableBytes)
        let existing = self.file
        guard fits || (startOver && existing != nil) else { return nil }
        if fits { self.fileReserved += chunk.readableBytes }
        let offset = self.fileEnd
        self.isWritingFile = true
        self.lock.unlock()

        if startOver { existing?.truncate() }
        guard fits else {
            self.lock.lock()
            self.isWritingFile = false
            if self.isClosed { self.releaseSpool() }
            return nil
        }
        var failure: SpoolFile.Failure?
        var created: SpoolFile?
        do throws(SpoolFile.Failure) {
            let file: SpoolFile
            if let existing {
                file = existing
            } else {
                file = try SpoolFile.create(in: configuration.resolvedDirectory)
                created = file
            }
            try file.write(chunk, at: offset)
        } catch {
            failure = error
        }

        self.lock.lock()
        self.isWritingFile = false
        if let created {
            self.file = created
            spool.metrics?.spooled.increment()
        }
        if let failure {
            self.diskFailed = true
            self.fileReserved -= chunk.readableBytes
            spool.releaseDisk(chunk.readableBytes)
            spool.logger.warning(
                "stream cannot spool to disk; it holds its database connection instead",
                metadata: ["request.id": "\(self.requestID)", "error": "\(failure)"])
            if self.isClosed { self.releaseSpool() }
            return false
        }
        if self.isClosed {
            self.releaseSpool()
            self.lock.unlock(withValue: true)
            throw ChannelClosed()
        }
        self.accept(chunk)
        self.fileEnd += chunk.readableBytes
        let pump = self.claimPump()
        self.lock.unlock(withValue: true)
        if pump { self.hop.execute { self.pump() } }
        return true
    }

    /// Whether the producer must schedule a pump for what it just spooled: nothing on the event
    /// loop's side would look at the spool otherwise (holding the lock).
    private func claimPump() -> Bool {
        guard !self.pumpScheduled, !self.isPumping, self.chunksInFlight == 0, !self.isReadingFile else { return false }
        self.pumpScheduled = true
        return true
    }

    /// Hands `bytes` to the channel now if it can take them, never waiting: for an event
    /// stream, whose producer serves many streams and keeps what it could not send (a sink
    /// made without a spool or a coding: ``ResponseExchange/startEventStream(headers:)``).
    /// Returns false, taking nothing, while the channel cannot take them; `whenWritable` then
    /// runs once (on the event loop) when it can again. Throws ``ChannelClosed`` after
    /// ``close()``.
    public func offer(_ bytes: [UInt8], whenWritable: @escaping @Sendable () -> Void) throws -> Bool {
        precondition(self.spool == nil && self.compression == nil, "offer(_:whenWritable:) needs a sink without a spool or a coding")
        self.lock.lock()
        if self.isClosed {
            self.lock.unlock()
            throw ChannelClosed()
        }
        guard self.isWritable && self.chunksInFlight < self.maximumChunksInFlight else {
            self.onWritable = whenWritable
            self.lock.unlock()
            return false
        }
        self.handOverNow(self.allocator.buffer(bytes: bytes))
        return true
    }

    /// Hands `chunk` to the event loop now, without a spool (holding the lock on entry; it is
    /// released on return).
    private func handOverNow(_ chunk: ByteBuffer) {
        self.accept(chunk)
        let isFirst = self.deliveredCount == 0
        self.deliveredCount += 1
        self.chunksInFlight += 1
        self.lock.unlock()
        let deliver = self.deliverChunk
        self.hop.execute { deliver(chunk, isFirst) }
    }

    /// The ``offer(_:whenWritable:)`` callback to run now that the channel may take a chunk
    /// (holding the lock).
    private func takeWritableAction() -> (@Sendable () -> Void)? {
        guard !self.isClosed, self.isWritable, self.chunksInFlight < self.maximumChunksInFlight, let action = self.onWritable else {
            return nil
        }
        self.onWritable = nil
        return action
    }

    /// Records the rest of the body, which the connection handler sends.
    private func record(_ last: [UInt8]) throws {
        try self.withLock {
            if self.isClosed { throw ChannelClosed() }
            self.byteCount += last.count
            self.finishedRest = last
        }
    }

    // MARK: Event-loop side

    /// Hands spooled chunks to the channel while it can take them, and starts reading the
    /// spool file when memory is empty. On the event loop.
    func pump() {
        self.lock.lock()
        self.pumpScheduled = false
        guard !self.isPumping else {
            self.lock.unlock()
            return
        }
        self.isPumping = true
        while !self.isClosed && self.isWritable && self.chunksInFlight < self.maximumChunksInFlight {
            if !self.queued.isEmpty {
                let chunk = self.queued.removeFirst()
                self.queuedBytes -= chunk.readableBytes
                let isFirst = self.deliveredCount == 0
                self.deliveredCount += 1
                self.chunksInFlight += 1
                self.lock.unlock(withValue: true)
                self.spool?.memoryChanged(by: -chunk.readableBytes)
                self.deliverChunk(chunk, isFirst)
                self.lock.lock()
                continue
            }
            if self.fileStart < self.fileEnd && !self.isReadingFile, let file = self.file, let spool = self.spool {
                let count = min(Self.spoolReadSize, self.fileEnd - self.fileStart)
                let offset = self.fileStart
                self.fileStart += count
                self.isReadingFile = true
                spool.io.submit { state in
                    let result: Result<ByteBuffer, SpoolFile.Failure>
                    if case .active = state {
                        result = Result { () throws(SpoolFile.Failure) in
                            try file.read(count: count, at: offset, allocator: self.allocator)
                        }
                    } else {
                        result = .failure(SpoolFile.Failure(operation: "read the spool file (shutting down)", code: EINTR))
                    }
                    self.hop.execute { self.fileRead(result) }
                }
            }
            break
        }
        self.isPumping = false
        let drained = self.takeDrainedAction()
        self.lock.unlock(withValue: true)
        drained?()
    }

    /// A read of the spool file finished. On the event loop.
    private func fileRead(_ result: Result<ByteBuffer, SpoolFile.Failure>) {
        self.lock.lock()
        self.isReadingFile = false
        guard !self.isClosed else {
            self.lock.unlock(withValue: true)
            return
        }
        switch result {
        case .success(let chunk):
            let isFirst = self.deliveredCount == 0
            self.deliveredCount += 1
            self.chunksInFlight += 1
            self.isPumping = true
            self.lock.unlock(withValue: true)
            self.deliverChunk(chunk, isFirst)
            self.lock.lock()
            self.isPumping = false
            self.lock.unlock()
            self.pump()
        case .failure(let failure):
            // The rest of the body is lost: the connection handler cuts the response short.
            self.spool?.logger.error(
                "spool file unreadable; response cut short", metadata: ["request.id": "\(self.requestID)", "error": "\(failure)"])
            self.spoolFailed = true
            self.lock.unlock(withValue: true)
            let drained = self.withLock { self.takeDrainedAction() }
            drained?()
            // A producer still running stops (and cancels its statement).
            self.close()
        }
    }

    /// A chunk handed over by ``write(_:)`` or the pump has been written; `channelIsWritable` is
    /// the channel's writability after the write.
    func chunkWritten(channelIsWritable: Bool) {
        let writable = self.withLockSignalling {
            self.chunksInFlight -= 1
            self.isWritable = channelIsWritable
            return self.takeWritableAction()
        }
        self.pump()
        writable?()
    }

    /// The channel's writability changed (`channelWritabilityChanged`).
    func writabilityChanged(_ isWritable: Bool) {
        let writable = self.withLockSignalling {
            self.isWritable = isWritable
            return self.takeWritableAction()
        }
        if isWritable { self.pump() }
        writable?()
    }

    /// Runs `action` on the event loop once every chunk written so far has been handed to the
    /// channel (now, if nothing is spooled), with `complete` true; with false when the spool
    /// lost part of the body (the response must be cut short). Never when the channel closed
    /// first. Call on the event loop, after the producer is done.
    func whenDrained(_ action: @escaping @Sendable (_ complete: Bool) -> Void) {
        self.lock.lock()
        self.whenDrained = action
        let drained = self.takeDrainedAction()
        self.lock.unlock()
        drained?()
    }

    /// The drained action bound to its outcome, when it is set and nothing is left to hand
    /// over, or the spool failed (holding the lock).
    private func takeDrainedAction() -> (@Sendable () -> Void)? {
        guard let action = self.whenDrained else { return nil }
        if self.spoolFailed {
            self.whenDrained = nil
            self.releaseSpool()
            return { action(false) }
        }
        guard !self.isClosed, self.queued.isEmpty, self.fileStart == self.fileEnd, !self.isReadingFile, !self.isWritingFile
        else { return nil }
        self.whenDrained = nil
        self.releaseSpool()
        return { action(true) }
    }

    /// Drops the spool: memory, file and disk budget (holding the lock).
    private func releaseSpool() {
        if self.queuedBytes > 0 { self.spool?.memoryChanged(by: -self.queuedBytes) }
        self.queued = []
        self.queuedBytes = 0
        self.spool?.releaseDisk(self.fileReserved)
        self.fileReserved = 0
        self.fileStart = 0
        self.fileEnd = 0
        self.file = nil
    }

    /// The channel is gone: fail the producer's next call, wake it, drop the spool, and cancel
    /// its statement.
    func close() {
        let onClose: (@Sendable () -> Void)? = self.withLockSignalling {
            guard !self.isClosed else { return nil }
            self.isClosed = true
            self.onWritable = nil
            if !self.isWritingFile { self.releaseSpool() }
            defer { self.onClose = nil }
            return self.onClose
        }
        self.compression?.cancel()
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
        self.withLock { self.byteCount == 0 && !self.isClosed } && !(self.compression?.tookInput ?? false)
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
                headSent: self.chunkCount > 0, chunkCount: self.chunkCount,
                byteCount: self.byteCount, finishedRest: self.finishedRest, isWaitingForWritability: self.waitingForWritability,
                pauses: self.pauses, isClosed: self.isClosed, spooledBytes: self.queuedBytes + self.fileEnd - self.fileStart,
                usedFile: self.file != nil
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
