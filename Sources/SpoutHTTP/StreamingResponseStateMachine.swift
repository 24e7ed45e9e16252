import NIOCore

/// What a ``StreamingResponseSink`` decides, as a value: where each chunk of a streamed body
/// goes (to the channel now, to the memory spool, to the spool file, or nowhere yet: the
/// producer waits), when the event loop's side hands spooled chunks over, when the body is
/// drained, and what a close drops.
///
/// Contract: every method is one transition, made by its caller holding the sink's lock, and
/// returns the action the caller performs after (a chunk to deliver, a file to write or read,
/// a callback to run, spool bytes to give back). Nothing here touches a channel, a file, a
/// lock or a thread, so every decision is unit-tested on its own
/// (`StreamingResponseStateMachineTests`). `File` is the spool file's handle; the machine
/// owns it from ``fileWriteEnded(count:created:failed:)`` until a ``SpoolRelease`` drops it.
///
/// The rules, as the sink's doc comment promises them:
/// - Without a spool a chunk is delivered while the channel is writable and fewer than
///   ``maximumChunksInFlight`` are on their way; otherwise the producer waits.
/// - With a spool every chunk goes through the memory queue while the file is empty (so the
///   order holds), up to ``SpoolLimits/memoryBytesPerStream``; past that, a client that is
///   behind (its socket full, or a file not yet read back) gets the file, within
///   ``SpoolLimits/maximumBytesPerStream`` and the shared disk budget; a client that is not
///   behind, or a full budget, makes the producer wait (the first such hold is reported once).
/// - After ``close()`` every producer call fails, and whatever was spooled is released once.
struct StreamingResponseStateMachine<File> {
    typealias Callback = @Sendable () -> Void
    typealias DrainedCallback = @Sendable (_ complete: Bool) -> Void

    /// The sizes a spooling stream keeps to.
    struct SpoolLimits: Sendable, Hashable {
        var memoryBytesPerStream: Int
        var maximumBytesPerStream: Int
    }

    /// Spooled bytes to give back: the memory spool's and the disk budget's. The file, if
    /// any, has been dropped with it.
    struct SpoolRelease: Sendable, Hashable {
        var memoryBytes = 0
        var diskBytes = 0

        static var none: SpoolRelease { SpoolRelease() }
    }

    /// An append to the spool file, made outside the lock.
    struct FileWrite {
        /// The file to write; nil: create one first.
        var file: File?
        var offset: Int
        /// Truncate the file first: the client caught up, and the file starts over.
        var truncate: Bool
        /// Append the chunk; false: only truncate, then look again (the chunk did not fit).
        var append: Bool
        /// Disk budget given back by starting over, to release before writing.
        var releasedDisk: Int
    }

    /// What the producer does with a chunk it wrote.
    enum WriteAction {
        /// The sink is closed: the producer stops (``StreamingResponseSink/ChannelClosed``),
        /// after giving back what is released.
        case fail(SpoolRelease)
        /// Hand the chunk to the event loop; `isFirst`: the response head goes before it.
        case deliver(ByteBuffer, isFirst: Bool)
        /// The chunk is in the memory spool (`bytes` more of the memory budget); schedule a
        /// pump on the event loop when `schedulePump`.
        case queued(bytes: Int, schedulePump: Bool)
        /// Write the chunk to the spool file, then report with ``fileWriteEnded(count:created:failed:)``
        /// (or ``truncated()`` when it only truncates).
        case writeFile(FileWrite)
        /// Wait until the event loop's side changes something, then ``waitEnded()`` and write
        /// again. `firstHold`: this stream holds its connection for the first time because
        /// its spool may not grow (log and count it once).
        case wait(firstHold: Bool)
    }

    /// The pump's next step, on the event loop.
    enum PumpStep {
        /// Deliver a chunk taken from the memory spool (`bytes` less of the memory budget).
        case deliver(ByteBuffer, isFirst: Bool, bytes: Int)
        /// The pump is over; read `read` back from the file if set, then run `drained` if set.
        case finish(read: FileRead?, drained: Drained?)
    }

    /// A read of the spool file, made off the event loop; its result comes back to
    /// ``fileReadEnded(_:)``.
    struct FileRead {
        var file: File
        var offset: Int
        var count: Int
    }

    /// The drained callback with its outcome, and what the spool gives back.
    struct Drained {
        var callback: DrainedCallback
        var complete: Bool
        var release: SpoolRelease
    }

    /// What a finished read of the spool file leads to.
    enum FileReadAction {
        /// Nothing: the sink closed meanwhile.
        case none
        /// Deliver the chunk read, then ``readDelivered()`` and pump.
        case deliver(ByteBuffer, isFirst: Bool)
        /// The rest of the body is lost: run `drained` (if set) and close the sink.
        case lost(drained: Drained?)
    }

    let maximumChunksInFlight: Int
    /// Nil: the stream does not spool (it waits for the client instead).
    let spool: SpoolLimits?

    /// Whether the channel is still there.
    private enum Lifecycle {
        case open
        /// The channel went away: every producer call fails.
        case closed
    }

    /// What the producer is doing.
    enum ProducerState {
        case writing
        /// Waiting for the event loop's side; `forChannel`: for the channel to become writable
        /// (a backpressure pause), not only for chunks in flight or a busy event loop.
        case waiting(forChannel: Bool)
    }

    /// The event loop's pump of spooled chunks.
    private enum PumpState {
        case idle
        /// A pump is on its way to the event loop.
        case scheduled
        /// A pump, or the delivery of a chunk read back, runs.
        case running
    }

    /// Whether the spool file may be written and read.
    private enum FileHealth {
        case usable
        /// The disk refused a write: this stream spools no more to disk.
        case writeRefused
        /// The file could not be read back: the body cannot be completed.
        case readLost
    }

    // The channel: its writability is the channel's, as last reported.
    private(set) var isWritable = true
    private(set) var chunksInFlight = 0
    private var lifecycle = Lifecycle.open

    // The body.
    private(set) var chunkCount = 0
    private(set) var deliveredCount = 0
    private(set) var byteCount = 0
    /// The bytes given to the producer's finish, once it was called.
    private(set) var finishedRest: [UInt8]?

    // The producer.
    private(set) var producer = ProducerState.writing
    /// How many times the producer started waiting for the channel.
    private(set) var pauses = 0
    /// How many times the producer held its connection because the spool may not grow.
    private var holds = 0

    // The memory spool: chunks written, not yet delivered, in order. Only filled while the
    // file is empty, so it always comes first.
    private var queued = CircularBuffer<ByteBuffer>()
    private(set) var queuedBytes = 0

    // The file spool: its readable bytes are `fileStart..<fileEnd`; `fileReserved` of the
    // disk budget is this stream's.
    private var file: File?
    private(set) var filesCreated = 0
    private var fileStart = 0
    private var fileEnd = 0
    private var fileReserved = 0
    /// The bytes being read back from the file (off the event loop), while a read runs.
    private var reading: Int?
    /// The bytes the producer is appending to the file (outside the lock), while it does (0
    /// while it only truncates it).
    private var appending: Int?
    private var fileHealth = FileHealth.usable

    private var pump = PumpState.idle

    // Callbacks waiting for something.
    private var onClose: Callback?
    private var onWritable: Callback?
    private var whenDrained: DrainedCallback?

    init(maximumChunksInFlight: Int, spool: SpoolLimits?) {
        self.maximumChunksInFlight = max(1, maximumChunksInFlight)
        self.spool = spool
    }

    var isClosed: Bool { self.lifecycle == .closed }

    var isWaitingForWritability: Bool {
        if case .waiting(forChannel: true) = self.producer { return true }
        return false
    }

    /// The disk refused a write of this stream's spool.
    var diskFailed: Bool { self.fileHealth != .usable }

    /// Bytes spooled and not yet delivered (memory and file).
    var spooledBytes: Int { self.queuedBytes + self.fileEnd - self.fileStart }

    /// Nothing was written and the channel is still there.
    var isUntouched: Bool { self.byteCount == 0 && !self.isClosed }

    private var canDeliver: Bool { self.isWritable && self.chunksInFlight < self.maximumChunksInFlight }

    private var fileIsEmpty: Bool { self.fileStart == self.fileEnd && self.reading == nil && self.appending == nil }

    // MARK: The producer

    /// The producer wrote `chunk` (not empty). `reserveDisk` takes bytes of the disk budget
    /// shared by every stream, or answers false.
    mutating func write(_ chunk: ByteBuffer, reserveDisk: (Int) -> Bool) -> WriteAction {
        if self.isClosed { return .fail(.none) }
        let count = chunk.readableBytes
        guard let spool = self.spool else {
            if self.canDeliver {
                self.accept(count)
                return .deliver(chunk, isFirst: self.startDelivery())
            }
            return self.startWaiting(firstHold: false)
        }
        let fileIsEmpty = self.fileIsEmpty
        if fileIsEmpty && (self.queued.isEmpty || self.queuedBytes + count <= spool.memoryBytesPerStream) {
            self.accept(count)
            self.queued.append(chunk)
            self.queuedBytes += count
            return .queued(bytes: count, schedulePump: self.claimPump())
        }
        // Disk only for a client that is behind, not for an event loop that is merely busy:
        // then the producer waits a moment, as without a spool.
        let clientIsBehind = !self.isWritable || !fileIsEmpty
        if clientIsBehind && self.fileHealth == .usable && self.appending == nil {
            // A file that was read back to its end starts over, giving its blocks back.
            let startOver = fileIsEmpty && self.fileEnd > 0
            var released = 0
            if startOver {
                released = self.fileReserved
                self.fileReserved = 0
                self.fileStart = 0
                self.fileEnd = 0
            }
            let fits = self.fileEnd + count <= spool.maximumBytesPerStream && reserveDisk(count)
            // A file that started over exists (its end was past zero), so its blocks go back.
            if fits || startOver {
                if fits { self.fileReserved += count }
                self.appending = fits ? count : 0
                return .writeFile(FileWrite(file: self.file, offset: self.fileEnd, truncate: startOver, append: fits, releasedDisk: released))
            }
        }
        return self.startWaiting(firstHold: clientIsBehind)
    }

    /// What the producer does after appending to the spool file.
    enum FileWriteOutcome {
        /// The chunk is spooled; schedule a pump when `schedulePump`.
        case written(schedulePump: Bool)
        /// The disk refused it: give its `count` bytes back to the disk budget and write the
        /// chunk again (this stream no longer spools to disk, so it waits or fails).
        case refused
        /// The sink closed meanwhile: stop, after giving back what is released (and, when
        /// refused, the chunk's `count` bytes).
        case fail(SpoolRelease, refused: Bool)
    }

    /// The append of a ``FileWrite`` of `count` bytes ended: `created` is the file it made
    /// (if it made one), `failed` whether the disk refused it.
    mutating func fileWriteEnded(count: Int, created: File?, failed: Bool) -> FileWriteOutcome {
        self.appending = nil
        if let created {
            self.file = created
            self.filesCreated += 1
        }
        if failed {
            self.fileHealth = .writeRefused
            self.fileReserved -= count
        }
        if self.isClosed { return .fail(self.releaseSpool(), refused: failed) }
        if failed { return .refused }
        self.accept(count)
        self.fileEnd += count
        return .written(schedulePump: self.claimPump())
    }

    /// A ``FileWrite`` that only truncated ended: the chunk did not fit, so the producer
    /// holds (or stops, when the sink closed meanwhile).
    mutating func truncated() -> WriteAction {
        self.appending = nil
        if self.isClosed { return .fail(self.releaseSpool()) }
        return self.startWaiting(firstHold: true)
    }

    /// The producer woke from a ``WriteAction/wait(firstHold:)``.
    mutating func waitEnded() {
        self.producer = .writing
    }

    /// The producer finished the body with `rest`, which the connection handler sends. False:
    /// the sink is closed.
    mutating func finish(_ rest: [UInt8]) -> Bool {
        if self.isClosed { return false }
        self.byteCount += rest.count
        self.finishedRest = rest
        return true
    }

    /// An event stream's producer offers `count` bytes, never waiting (a sink without a
    /// spool). Returns nil when the sink is closed; false, storing `whenWritable` (replacing
    /// one before), when the channel cannot take them; true when they are delivered
    /// (`isFirst`: the head goes before).
    mutating func offer(count: Int, whenWritable: @escaping Callback) -> (delivered: Bool, isFirst: Bool)? {
        if self.isClosed { return nil }
        guard self.canDeliver else {
            self.onWritable = whenWritable
            return (false, false)
        }
        self.accept(count)
        return (true, self.startDelivery())
    }

    // MARK: The event loop

    /// A pump was asked for: false when one runs already.
    mutating func pumpStarted() -> Bool {
        guard self.pump != .running else { return false }
        self.pump = .running
        return true
    }

    /// The running pump's next step: a queued chunk while the channel can take one, then at
    /// most one read of the file, then the end.
    mutating func nextPumpStep() -> PumpStep {
        precondition(self.pump == .running, "a pump step outside a pump")
        var read: FileRead?
        if !self.isClosed && self.canDeliver {
            if let chunk = self.queued.popFirst() {
                self.queuedBytes -= chunk.readableBytes
                return .deliver(chunk, isFirst: self.startDelivery(), bytes: chunk.readableBytes)
            }
            if self.fileStart < self.fileEnd && self.reading == nil, let file = self.file {
                let count = min(StreamingResponseSink.spoolReadSize, self.fileEnd - self.fileStart)
                read = FileRead(file: file, offset: self.fileStart, count: count)
                self.fileStart += count
                self.reading = count
            }
        }
        self.pump = .idle
        return .finish(read: read, drained: self.takeDrained())
    }

    /// A read of the spool file ended with `chunk`, or nil when the file could not be read.
    mutating func fileReadEnded(_ chunk: ByteBuffer?) -> FileReadAction {
        self.reading = nil
        if self.isClosed { return .none }
        guard let chunk else {
            self.fileHealth = .readLost
            return .lost(drained: self.takeDrained())
        }
        self.pump = .running
        return .deliver(chunk, isFirst: self.startDelivery())
    }

    /// The chunk a ``FileReadAction/deliver(_:isFirst:)`` named was delivered.
    mutating func readDelivered() {
        self.pump = .idle
    }

    /// A delivered chunk was written; `channelIsWritable` is the channel's writability after.
    /// Returns the offer's callback to run, if the channel may take a chunk now.
    mutating func chunkWritten(channelIsWritable: Bool) -> Callback? {
        self.chunksInFlight -= 1
        self.isWritable = channelIsWritable
        return self.takeWritable()
    }

    /// The channel's writability changed. Returns the offer's callback to run, if any.
    mutating func writabilityChanged(_ isWritable: Bool) -> Callback? {
        self.isWritable = isWritable
        return self.takeWritable()
    }

    /// The connection handler waits for the body to be drained (after the producer is done).
    mutating func whenDrained(_ callback: @escaping DrainedCallback) -> Drained? {
        self.whenDrained = callback
        return self.takeDrained()
    }

    /// The channel is gone. Returns the close callback (once) and what the spool gives back
    /// (unless the producer is writing the file: it gives it back when it ends).
    mutating func close() -> (onClose: Callback?, release: SpoolRelease)? {
        guard self.lifecycle == .open else { return nil }
        self.lifecycle = .closed
        self.onWritable = nil
        let release = self.appending != nil ? .none : self.releaseSpool()
        defer { self.onClose = nil }
        return (self.onClose, release)
    }

    /// Sets the close callback (replacing one before); false when the sink is closed already
    /// (the caller runs it now).
    mutating func setOnClose(_ callback: Callback?) -> Bool {
        if self.isClosed { return false }
        self.onClose = callback
        return true
    }

    // MARK: Internals

    /// Counts a chunk the stream accepted.
    private mutating func accept(_ count: Int) {
        self.chunkCount += 1
        self.byteCount += count
    }

    /// Counts a chunk on its way to the channel; returns whether it is the first.
    private mutating func startDelivery() -> Bool {
        defer { self.deliveredCount += 1 }
        self.chunksInFlight += 1
        return self.deliveredCount == 0
    }

    private mutating func startWaiting(firstHold clientIsBehind: Bool) -> WriteAction {
        let firstHold = clientIsBehind && self.holds == 0
        if clientIsBehind { self.holds += 1 }
        let blockedByChannel = !self.isWritable
        if blockedByChannel && !self.isWaitingForWritability { self.pauses += 1 }
        self.producer = .waiting(forChannel: blockedByChannel)
        return .wait(firstHold: firstHold)
    }

    /// Whether the producer must schedule a pump for what it just spooled: nothing on the
    /// event loop's side would look at the spool otherwise.
    private mutating func claimPump() -> Bool {
        guard self.pump == .idle, self.chunksInFlight == 0, self.reading == nil else { return false }
        self.pump = .scheduled
        return true
    }

    private mutating func takeWritable() -> Callback? {
        guard !self.isClosed, self.canDeliver, let callback = self.onWritable else { return nil }
        self.onWritable = nil
        return callback
    }

    /// The drained callback with its outcome, when it is set and nothing is left to deliver,
    /// or the spool failed.
    private mutating func takeDrained() -> Drained? {
        guard let callback = self.whenDrained else { return nil }
        if self.fileHealth == .readLost {
            self.whenDrained = nil
            return Drained(callback: callback, complete: false, release: self.releaseSpool())
        }
        guard !self.isClosed, self.queued.isEmpty, self.fileIsEmpty else { return nil }
        self.whenDrained = nil
        return Drained(callback: callback, complete: true, release: self.releaseSpool())
    }

    /// Drops the spool: memory, file and disk budget.
    private mutating func releaseSpool() -> SpoolRelease {
        let release = SpoolRelease(memoryBytes: self.queuedBytes, diskBytes: self.fileReserved)
        self.queued.removeAll()
        self.queuedBytes = 0
        self.fileReserved = 0
        self.fileStart = 0
        self.fileEnd = 0
        self.file = nil
        return release
    }
}

extension StreamingResponseStateMachine.FileRead: Sendable where File: Sendable {}
