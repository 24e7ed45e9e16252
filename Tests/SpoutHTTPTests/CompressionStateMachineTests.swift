import Testing

@testable import SpoutHTTP

/// ``CompressionStateMachine`` on its own: each transition of a compressed stream's producer
/// and compressor and the action it returns, with no coder, thread, lock or clock.
@Suite("The compression stage's state machine")
struct CompressionStateMachineTests {
    typealias Machine = CompressionStateMachine

    struct CoderFailed: Error, Equatable {}

    private static func chunk(_ byte: UInt8, count: Int = 3) -> [UInt8] {
        [UInt8](repeating: byte, count: count)
    }

    /// Whether `action` queued the chunk, and asked to start the compressor when `starts`.
    private static func isQueued(_ action: Machine.WriteAction, starts: Bool) -> Bool {
        if case .queued(let start) = action { return start == starts }
        return false
    }

    private static func isWait(_ action: Machine.WriteAction) -> Bool {
        if case .wait = action { return true }
        return false
    }

    /// The chunk `action` compresses, if it is a compression.
    private static func compressed(_ action: Machine.CompressorAction) -> [UInt8]? {
        if case .compress(let chunk) = action { return chunk }
        return nil
    }

    private static func isWait(_ action: Machine.CompressorAction, flushAfterDelay: Bool) -> Bool {
        if case .wait(let flush) = action { return flush == flushAfterDelay }
        return false
    }

    private static func isFlush(_ action: Machine.CompressorAction) -> Bool {
        if case .flush = action { return true }
        return false
    }

    /// The error a producer's action fails with, if it fails.
    private static func failure(_ action: Machine.WriteAction) -> (any Error)? {
        if case .fail(let error) = action { return error }
        return nil
    }

    private static func failure(_ action: Machine.FinishAction) -> (any Error)? {
        if case .fail(let error) = action { return error }
        return nil
    }

    @Test("the first chunk starts the compressor, the next ones are queued for it in order")
    func firstChunkStartsTheCompressor() {
        var machine = Machine(maximumQueued: 4)
        #expect(machine.compressor == .notStarted)
        #expect(Self.isQueued(machine.write(Self.chunk(1)), starts: true))
        #expect(Self.isQueued(machine.write(Self.chunk(2)), starts: false))
        #expect(machine.compressor == .idle && machine.queuedCount == 2 && machine.bytesTaken == 6)
        #expect(Self.compressed(machine.nextWork()) == Self.chunk(1))
        #expect(Self.compressed(machine.nextWork()) == Self.chunk(2))
        #expect(machine.compressor == .compressing && machine.queuedCount == 0)
    }

    @Test("the producer waits while the compressor is behind, and goes on once it takes a chunk")
    func producerWaitsForTheCompressor() {
        var machine = Machine(maximumQueued: 2)
        _ = machine.write(Self.chunk(1))
        _ = machine.write(Self.chunk(2))
        #expect(Self.isWait(machine.write(Self.chunk(3))))
        #expect(machine.producer == .waitingForRoom && machine.queuedCount == 2)
        // Still full: woken for something else, it waits again.
        #expect(Self.isWait(machine.write(Self.chunk(3))))
        #expect(Self.compressed(machine.nextWork()) == Self.chunk(1))
        #expect(Self.isQueued(machine.write(Self.chunk(3)), starts: false))
        #expect(machine.producer == .writing)
        #expect(Self.compressed(machine.nextWork()) == Self.chunk(2))
        #expect(Self.compressed(machine.nextWork()) == Self.chunk(3))
    }

    @Test("out of input the compressor waits the flush delay, then flushes; a chunk within it costs no flush")
    func flushesOnlyAfterTheDelay() {
        var machine = Machine(maximumQueued: 4)
        _ = machine.write(Self.chunk(1))
        _ = machine.nextWork()
        #expect(Self.isWait(machine.nextWork(), flushAfterDelay: true))
        #expect(machine.compressor == .holdingInput)
        // A wake-up with no chunk: still within the delay.
        #expect(Self.isWait(machine.nextWork(), flushAfterDelay: true))
        _ = machine.write(Self.chunk(2))
        #expect(Self.compressed(machine.nextWork()) == Self.chunk(2))
        #expect(Self.isWait(machine.nextWork(), flushAfterDelay: true))
        machine.flushDelayElapsed()
        #expect(machine.compressor == .flushDue)
        #expect(Self.isFlush(machine.nextWork()))
        // Flushed: nothing is held, so it waits for input as long as it takes.
        #expect(Self.isWait(machine.nextWork(), flushAfterDelay: false))
        #expect(machine.compressor == .idle)
        // The delay means nothing to a compressor that holds nothing.
        machine.flushDelayElapsed()
        #expect(Self.isWait(machine.nextWork(), flushAfterDelay: false))
    }

    @Test("a chunk that comes as the delay runs out is compressed before any flush")
    func chunkBeforeTheDueFlush() {
        var machine = Machine(maximumQueued: 4)
        _ = machine.write(Self.chunk(1))
        _ = machine.nextWork()
        _ = machine.nextWork()
        machine.flushDelayElapsed()
        _ = machine.write(Self.chunk(2))
        #expect(Self.compressed(machine.nextWork()) == Self.chunk(2))
        #expect(Self.isWait(machine.nextWork(), flushAfterDelay: true))
    }

    @Test("finish codes the end after every queued chunk, and returns once the end reached the target")
    func finishCodesTheEndLast() {
        var machine = Machine(maximumQueued: 4)
        _ = machine.write(Self.chunk(1))
        _ = machine.write(Self.chunk(2))
        guard case .wait = machine.finish(Self.chunk(9)) else {
            Issue.record("finish does not wait for the compressor")
            return
        }
        #expect(machine.producer == .finishing)
        #expect(Self.compressed(machine.nextWork()) == Self.chunk(1))
        guard case .wait = machine.endAwaited() else {
            Issue.record("the producer returns before the end is coded")
            return
        }
        #expect(Self.compressed(machine.nextWork()) == Self.chunk(2))
        guard case .codeEnd(let last) = machine.nextWork() else {
            Issue.record("the end is not coded after the chunks")
            return
        }
        #expect(last == Self.chunk(9) && machine.compressor == .codingEnd)
        guard case .wait = machine.endAwaited() else {
            Issue.record("the producer returns while the end is being coded")
            return
        }
        machine.codingEnded()
        guard case .done = machine.endAwaited() else {
            Issue.record("the producer is not let go once the end is coded")
            return
        }
        #expect(machine.hasStopped && machine.producer == .done)
    }

    @Test("the end of a compressor holding unflushed input is coded at once, with no flush before it")
    func finishWhileHoldingInput() {
        var machine = Machine(maximumQueued: 4)
        _ = machine.write(Self.chunk(1))
        _ = machine.nextWork()
        #expect(Self.isWait(machine.nextWork(), flushAfterDelay: true))
        _ = machine.finish([])
        guard case .codeEnd(let last) = machine.nextWork() else {
            Issue.record("the end is not coded next")
            return
        }
        #expect(last.isEmpty)
    }

    @Test("a body given only to finish is coded on the producer's thread, with no compressor")
    func smallBodyIsCodedHere() {
        var machine = Machine(maximumQueued: 4)
        guard case .codeHere(let last) = machine.finish(Self.chunk(5)) else {
            Issue.record("a small body waits for a compressor that never starts")
            return
        }
        #expect(last == Self.chunk(5) && machine.compressor == .notStarted && machine.bytesTaken == 3)
    }

    @Test("a close while the compressor compresses drops the queue, fails the producer and stops the compressor")
    func closeDuringCompression() {
        var machine = Machine(maximumQueued: 1)
        _ = machine.write(Self.chunk(1))
        _ = machine.nextWork()
        _ = machine.write(Self.chunk(2))
        #expect(Self.isWait(machine.write(Self.chunk(3))))
        machine.cancel()
        #expect(machine.queuedCount == 0)
        #expect(Self.failure(machine.write(Self.chunk(3))) is StreamingResponseSink.ChannelClosed)
        #expect(Self.failure(machine.finish([])) is StreamingResponseSink.ChannelClosed)
        guard case .stop = machine.nextWork() else {
            Issue.record("the compressor goes on after a close")
            return
        }
        #expect(machine.hasStopped)
    }

    @Test("a close while the producer waits for the end lets it go with ChannelClosed")
    func closeWhileFinishing() {
        var machine = Machine(maximumQueued: 4)
        _ = machine.write(Self.chunk(1))
        _ = machine.finish([])
        machine.cancel()
        #expect(Self.failure(machine.endAwaited()) is StreamingResponseSink.ChannelClosed)
        guard case .stop = machine.nextWork() else {
            Issue.record("the compressor codes the end of a closed stream")
            return
        }
    }

    @Test("a close before anything was written fails the small body's finish")
    func closeBeforeAnyChunk() {
        var machine = Machine(maximumQueued: 4)
        machine.cancel()
        #expect(Self.failure(machine.finish(Self.chunk(1))) is StreamingResponseSink.ChannelClosed)
    }

    @Test("the coder's failure ends the compressor; the producer's next call throws it, even after a close")
    func coderFailureReachesTheProducer() {
        var machine = Machine(maximumQueued: 2)
        _ = machine.write(Self.chunk(1))
        _ = machine.write(Self.chunk(2))
        _ = machine.nextWork()
        machine.compressorFailed(CoderFailed())
        #expect(machine.hasStopped && machine.queuedCount == 0)
        #expect(Self.failure(machine.write(Self.chunk(3))) as? CoderFailed == CoderFailed())
        // The sink closes the stage after the failure: the producer is still told why.
        machine.cancel()
        #expect(Self.failure(machine.finish([])) as? CoderFailed == CoderFailed())
    }

    @Test("a failure while coding the end reaches the producer waiting for it")
    func failureWhileCodingTheEnd() {
        var machine = Machine(maximumQueued: 2)
        _ = machine.write(Self.chunk(1))
        _ = machine.nextWork()
        _ = machine.finish([])
        _ = machine.nextWork()
        machine.compressorFailed(CoderFailed())
        #expect(Self.failure(machine.endAwaited()) as? CoderFailed == CoderFailed())
        #expect(machine.producer == .done)
    }
}
