/// What a ``CompressionStage`` decides, as a value: when a chunk is queued or its producer
/// waits for room, when the compressor's thread starts, what it does next (compress a chunk,
/// flush, code the end, wait, stop), and how a close or a failure reaches both sides.
///
/// Contract: every method is one transition, made by its caller holding the stage's lock, and
/// returns the action the caller performs after (outside the lock for the coder's and the
/// target's work). Nothing here touches a coder, a thread, a lock or a clock, so every
/// decision is unit-tested on its own (`CompressionStateMachineTests`).
///
/// The rules, as the stage's doc comment promises them:
/// - A chunk is queued while fewer than ``maximumQueued`` wait; otherwise the producer waits
///   until the compressor takes one, or the stage stops.
/// - The compressor takes the queued chunks in order, then the last bytes. Out of input after
///   compressing without a flush, it waits for the next chunk up to the flush delay, then
///   flushes (``flushDelayElapsed()``); with nothing held it waits for input as long as it takes.
/// - A body given only to ``finish(_:)`` is coded on the producer's thread (no compressor).
/// - The first failure (the coder's or the target's) stops the compressor; ``cancel()`` (the
///   channel went away) stops both sides. Either drops what is queued, and every later producer
///   call fails: with the failure, else ``StreamingResponseSink/ChannelClosed``.
struct CompressionStateMachine {
    /// How many uncompressed chunks may wait for the compressor.
    let maximumQueued: Int

    /// How the stage as a whole stands.
    private enum Lifecycle {
        case running
        /// The coding's end reached the target.
        case finished
        /// The coder or the target failed; later producer calls throw this.
        case failed(any Error)
        /// The channel went away.
        case cancelled
    }

    /// What the producer is doing.
    enum ProducerState: Equatable {
        case writing
        /// Waiting for room in the queue.
        case waitingForRoom
        /// Handed the last bytes over; waiting for the compressor to code the end.
        case finishing
        /// Returned from ``finish(_:)``: the body is handed over (or the stage stopped it).
        case done
    }

    /// What the compressor's thread is doing.
    enum CompressorState: Equatable {
        /// No thread: nothing was written yet.
        case notStarted
        /// Waiting for input; the coder holds nothing unflushed.
        case idle
        /// Compressing a chunk without a flush (outside the lock).
        case compressing
        /// Out of input with compressed, unflushed bytes in the coder: waits for the next
        /// chunk up to the flush delay.
        case holdingInput
        /// The flush delay passed with no chunk: the next step is a flush.
        case flushDue
        /// Flushing the coder (outside the lock).
        case flushing
        /// Coding the last bytes and the end (outside the lock).
        case codingEnd
        /// The thread ended: finished, failed or cancelled.
        case ended
    }

    /// What the producer does with a chunk it wrote.
    enum WriteAction {
        /// The stage stopped: throw `error`.
        case fail(any Error)
        /// Wait for the compressor or a stop, then write the chunk again.
        case wait
        /// The chunk is queued; start the compressor's thread when `startCompressor`.
        case queued(startCompressor: Bool)
    }

    /// What the producer does with the last bytes, and while it waits for the end.
    enum FinishAction {
        /// The stage stopped: throw `error`.
        case fail(any Error)
        /// Nothing was written: code `last` and the end here, and hand them to the target.
        case codeHere([UInt8])
        /// Wait for the compressor, then ask ``endAwaited()``.
        case wait
        /// The coding's end reached the target: the body is handed over.
        case done
    }

    /// The compressor's next step.
    enum CompressorAction {
        /// Compress `chunk` without a flush and hand what comes out to the target.
        case compress([UInt8])
        /// Flush the coder and hand what comes out to the target.
        case flush
        /// Code `last` and the end, hand them to the target, then ``codingEnded()``.
        case codeEnd([UInt8])
        /// Wait for the producer; with `flushAfterDelay`, only up to the flush delay, then
        /// ``flushDelayElapsed()``. Then ask again.
        case wait(flushAfterDelay: Bool)
        /// The stage was cancelled: the thread ends.
        case stop
    }

    private var lifecycle = Lifecycle.running
    private(set) var producer = ProducerState.writing
    private(set) var compressor = CompressorState.notStarted
    /// Chunks written and not yet taken by the compressor, in order (at most
    /// ``maximumQueued``: removing the first moves that few references, and a body coded whole
    /// allocates no queue).
    private var queued: [[UInt8]] = []
    /// The last bytes, once the producer handed them over and until the compressor takes them.
    private var last: [UInt8]?
    /// Uncompressed bytes the producer handed over.
    private(set) var bytesTaken = 0

    init(maximumQueued: Int) {
        self.maximumQueued = max(1, maximumQueued)
    }

    /// How many chunks wait for the compressor.
    var queuedCount: Int { self.queued.count }

    /// Whether the compressor's thread has ended (finished, failed or cancelled).
    var hasStopped: Bool { self.compressor == .ended }

    /// Why the producer may not go on: the failure, else a cancel. Nil while it may, and after
    /// a finish that went through.
    private var stopReason: (any Error)? {
        switch self.lifecycle {
        case .running, .finished: nil
        case .failed(let error): error
        case .cancelled: StreamingResponseSink.ChannelClosed()
        }
    }

    // MARK: The producer

    /// The producer wrote `chunk` (not empty).
    mutating func write(_ chunk: [UInt8]) -> WriteAction {
        if let error = self.stopReason {
            self.producer = .done
            return .fail(error)
        }
        guard self.queued.count < self.maximumQueued else {
            self.producer = .waitingForRoom
            return .wait
        }
        self.producer = .writing
        self.queued.append(chunk)
        self.bytesTaken += chunk.count
        guard self.compressor == .notStarted else { return .queued(startCompressor: false) }
        self.compressor = .idle
        return .queued(startCompressor: true)
    }

    /// The producer finished the body with `last`.
    mutating func finish(_ last: [UInt8]) -> FinishAction {
        if let error = self.stopReason {
            self.producer = .done
            return .fail(error)
        }
        self.bytesTaken += last.count
        if self.compressor == .notStarted {
            self.producer = .done
            return .codeHere(last)
        }
        self.last = last
        self.producer = .finishing
        return .wait
    }

    /// The producer, having handed the last bytes over, looks again.
    mutating func endAwaited() -> FinishAction {
        switch self.lifecycle {
        case .running:
            return .wait
        case .finished:
            self.producer = .done
            return .done
        case .failed(let error):
            self.producer = .done
            return .fail(error)
        case .cancelled:
            self.producer = .done
            return .fail(StreamingResponseSink.ChannelClosed())
        }
    }

    // MARK: The compressor

    /// The compressor's next step, having done the last one it was given.
    mutating func nextWork() -> CompressorAction {
        if case .cancelled = self.lifecycle {
            self.compressor = .ended
            return .stop
        }
        precondition(self.compressor != .notStarted && self.compressor != .ended, "compressor work without a compressor")
        if !self.queued.isEmpty {
            self.compressor = .compressing
            return .compress(self.queued.removeFirst())
        }
        if let last = self.last {
            self.last = nil
            self.compressor = .codingEnd
            return .codeEnd(last)
        }
        switch self.compressor {
        case .compressing, .holdingInput:
            // A producer as fast as the compressor hands the next chunk within the delay,
            // so its chunks cost no flush each.
            self.compressor = .holdingInput
            return .wait(flushAfterDelay: true)
        case .flushDue:
            self.compressor = .flushing
            return .flush
        case .idle, .flushing:
            self.compressor = .idle
            return .wait(flushAfterDelay: false)
        case .notStarted, .codingEnd, .ended:
            preconditionFailure("compressor work after the end")
        }
    }

    /// The compressor waited the flush delay and no chunk came (one that came meanwhile is
    /// compressed first, without a flush).
    mutating func flushDelayElapsed() {
        if self.compressor == .holdingInput { self.compressor = .flushDue }
    }

    /// The coding's end reached the target: the thread ends, the producer may return.
    mutating func codingEnded() {
        self.compressor = .ended
        if case .running = self.lifecycle { self.lifecycle = .finished }
    }

    /// The coder or the target failed with `error` (the first failure is kept): the thread
    /// ends, what is queued is dropped, and the producer's next call throws it.
    mutating func compressorFailed(_ error: any Error) {
        self.compressor = .ended
        self.queued.removeAll()
        self.last = nil
        if case .running = self.lifecycle { self.lifecycle = .failed(error) }
    }

    // MARK: Any side

    /// The channel went away: the compressor stops at its next step, a waiting producer fails,
    /// what is queued is dropped. A failure before stays what the producer is told.
    mutating func cancel() {
        self.queued.removeAll()
        self.last = nil
        if case .running = self.lifecycle { self.lifecycle = .cancelled }
    }
}
