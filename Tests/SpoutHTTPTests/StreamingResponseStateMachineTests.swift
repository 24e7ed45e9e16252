import NIOCore
import Testing

@testable import SpoutHTTP

/// ``StreamingResponseStateMachine`` on its own: each transition and the action it returns,
/// with no channel, thread, lock or file (a spool file is an `Int` here).
@Suite("The streaming response's state machine")
struct StreamingResponseStateMachineTests {
    typealias Machine = StreamingResponseStateMachine<Int>

    private static func chunk(_ count: Int) -> ByteBuffer {
        ByteBuffer(repeating: UInt8(ascii: "x"), count: count)
    }

    private static func spooling(memory: Int = 100, file: Int = 1_000, inFlight: Int = 2) -> Machine {
        Machine(maximumChunksInFlight: inFlight, spool: .init(memoryBytesPerStream: memory, maximumBytesPerStream: file))
    }

    /// A spooling machine whose memory spool is full (`memory` bytes queued) and whose client
    /// is behind (its channel not writable).
    private static func fullAndBehind(memory: Int = 10) -> Machine {
        var machine = Self.spooling(memory: memory)
        _ = machine.write(Self.chunk(memory), reserveDisk: { _ in true })
        _ = machine.writabilityChanged(false)
        return machine
    }

    /// Runs a pump to its end; returns the bytes of the chunks it delivered and how it finished.
    private static func pump(_ machine: inout Machine) -> (delivered: [Int], read: Machine.FileRead?, drained: Machine.Drained?) {
        guard machine.pumpStarted() else { return ([], nil, nil) }
        var delivered: [Int] = []
        while true {
            switch machine.nextPumpStep() {
            case .deliver(let chunk, _, let bytes):
                #expect(chunk.readableBytes == bytes)
                delivered.append(bytes)
            case .finish(let read, let drained):
                return (delivered, read, drained)
            }
        }
    }

    @Test("without a spool a chunk goes to the channel, the head before the first")
    func deliversWithoutSpool() {
        var machine = Machine(maximumChunksInFlight: 2, spool: nil)
        guard case .deliver(_, isFirst: true) = machine.write(Self.chunk(3), reserveDisk: { _ in false }) else {
            Issue.record("the first chunk is not delivered first")
            return
        }
        guard case .deliver(_, isFirst: false) = machine.write(Self.chunk(4), reserveDisk: { _ in false }) else {
            Issue.record("the second chunk is not delivered")
            return
        }
        #expect(machine.byteCount == 7 && machine.chunksInFlight == 2)
    }

    @Test("without a spool the producer waits for chunks in flight and for the channel")
    func waitsWithoutSpool() {
        var machine = Machine(maximumChunksInFlight: 1, spool: nil)
        _ = machine.write(Self.chunk(1), reserveDisk: { _ in false })
        guard case .wait(firstHold: false) = machine.write(Self.chunk(1), reserveDisk: { _ in false }) else {
            Issue.record("a second chunk in flight is allowed")
            return
        }
        // Waiting for the event loop, not for the client: no pause.
        #expect(machine.pauses == 0 && !machine.isWaitingForWritability)
        machine.waitEnded()
        _ = machine.chunkWritten(channelIsWritable: false)
        guard case .wait = machine.write(Self.chunk(1), reserveDisk: { _ in false }) else {
            Issue.record("a chunk goes to a channel that cannot take it")
            return
        }
        #expect(machine.pauses == 1 && machine.isWaitingForWritability)
        machine.waitEnded()
        _ = machine.writabilityChanged(true)
        guard case .deliver(_, isFirst: false) = machine.write(Self.chunk(1), reserveDisk: { _ in false }) else {
            Issue.record("the chunk is not delivered once the channel is writable")
            return
        }
    }

    @Test("with a spool chunks queue in memory and the event loop hands them over in order")
    func queuesInMemory() {
        var machine = Self.spooling()
        guard case .queued(bytes: 10, schedulePump: true) = machine.write(Self.chunk(10), reserveDisk: { _ in false }) else {
            Issue.record("the first chunk does not schedule a pump")
            return
        }
        guard case .queued(bytes: 20, schedulePump: false) = machine.write(Self.chunk(20), reserveDisk: { _ in false }) else {
            Issue.record("a second pump is scheduled")
            return
        }
        _ = machine.write(Self.chunk(30), reserveDisk: { _ in false })
        #expect(machine.spooledBytes == 60)
        // Two chunks in flight at most; the third waits for one to be written.
        let first = Self.pump(&machine)
        #expect(first.delivered == [10, 20] && first.read == nil && first.drained == nil)
        _ = machine.chunkWritten(channelIsWritable: true)
        let second = Self.pump(&machine)
        #expect(second.delivered == [30] && machine.spooledBytes == 0)
    }

    @Test("a client that is behind gets the file once memory is full, read back after memory")
    func spoolsToFile() {
        var machine = Self.spooling(memory: 100)
        _ = machine.write(Self.chunk(80), reserveDisk: { _ in true })
        _ = machine.writabilityChanged(false)
        guard case .writeFile(let write) = machine.write(Self.chunk(50), reserveDisk: { _ in true }) else {
            Issue.record("a full memory spool does not go to the file")
            return
        }
        #expect(write.file == nil && write.offset == 0 && write.append && !write.truncate)
        guard case .written = machine.fileWriteEnded(count: 50, created: 7, failed: false) else {
            Issue.record("the write is not taken")
            return
        }
        // With the file not empty, even a small chunk goes after it, not into memory.
        guard case .writeFile(let next) = machine.write(Self.chunk(5), reserveDisk: { _ in true }) else {
            Issue.record("a chunk overtakes the file")
            return
        }
        #expect(next.file == 7 && next.offset == 50)
        _ = machine.fileWriteEnded(count: 5, created: nil, failed: false)
        #expect(machine.spooledBytes == 135 && machine.filesCreated == 1)

        _ = machine.writabilityChanged(true)
        let pumped = Self.pump(&machine)
        #expect(pumped.delivered == [80])
        #expect(pumped.read?.file == 7 && pumped.read?.offset == 0 && pumped.read?.count == 55)
        guard case .deliver(let chunk, isFirst: false) = machine.fileReadEnded(Self.chunk(55)) else {
            Issue.record("the chunk read back is not delivered")
            return
        }
        #expect(chunk.readableBytes == 55)
        machine.readDelivered()
        #expect(machine.spooledBytes == 0)
    }

    @Test("a client that keeps up, or a full budget, holds the producer, reported once")
    func holds() {
        var machine = Self.spooling(memory: 10)
        _ = machine.write(Self.chunk(10), reserveDisk: { _ in true })
        // The event loop is busy, the client is not behind: wait, no file.
        guard case .wait(firstHold: false) = machine.write(Self.chunk(10), reserveDisk: { _ in true }) else {
            Issue.record("a busy event loop sends the stream to disk")
            return
        }
        machine.waitEnded()
        _ = machine.writabilityChanged(false)
        guard case .wait(firstHold: true) = machine.write(Self.chunk(10), reserveDisk: { _ in false }) else {
            Issue.record("a full disk budget does not hold")
            return
        }
        machine.waitEnded()
        guard case .wait(firstHold: false) = machine.write(Self.chunk(10), reserveDisk: { _ in false }) else {
            Issue.record("the hold is reported twice")
            return
        }
        machine.waitEnded()
        // The stream's own cap, whatever the budget.
        var capped = Self.spooling(memory: 10, file: 15)
        _ = capped.write(Self.chunk(10), reserveDisk: { _ in true })
        _ = capped.writabilityChanged(false)
        guard case .wait(firstHold: true) = capped.write(Self.chunk(20), reserveDisk: { _ in true }) else {
            Issue.record("a chunk past the stream's cap is spooled")
            return
        }
    }

    @Test("a disk that refuses a write ends spooling to disk for the stream")
    func diskRefuses() {
        var machine = Self.fullAndBehind()
        _ = machine.write(Self.chunk(10), reserveDisk: { _ in true })
        guard case .refused = machine.fileWriteEnded(count: 10, created: 3, failed: true) else {
            Issue.record("a refused write is taken")
            return
        }
        #expect(machine.diskFailed)
        guard case .wait(firstHold: true) = machine.write(Self.chunk(10), reserveDisk: { _ in true }) else {
            Issue.record("the stream goes on spooling to a failed disk")
            return
        }
    }

    @Test("a file read back to its end starts over, giving its budget back")
    func fileStartsOver() {
        var machine = Self.fullAndBehind()
        _ = machine.write(Self.chunk(40), reserveDisk: { _ in true })
        _ = machine.fileWriteEnded(count: 40, created: 1, failed: false)
        _ = machine.writabilityChanged(true)
        let pumped = Self.pump(&machine)
        _ = machine.fileReadEnded(pumped.read.map { Self.chunk($0.count) })
        machine.readDelivered()
        _ = machine.chunkWritten(channelIsWritable: false)
        _ = machine.chunkWritten(channelIsWritable: false)
        _ = machine.write(Self.chunk(10), reserveDisk: { _ in true })
        guard case .writeFile(let write) = machine.write(Self.chunk(30), reserveDisk: { _ in true }) else {
            Issue.record("the client behind again does not get the file")
            return
        }
        #expect(write.truncate && write.offset == 0 && write.file == 1 && write.releasedDisk == 40)
    }

    @Test("close fails the producer, gives the spool back and runs its callback once")
    func closes() {
        var machine = Self.spooling(memory: 100)
        _ = machine.write(Self.chunk(30), reserveDisk: { _ in true })
        let set = machine.setOnClose({})
        #expect(set)
        let closed = machine.close()
        #expect(closed?.onClose != nil && closed?.release == .init(memoryBytes: 30, diskBytes: 0))
        let closedAgain = machine.close()
        #expect(closedAgain == nil)
        guard case .fail(.none) = machine.write(Self.chunk(1), reserveDisk: { _ in true }) else {
            Issue.record("a write after close is taken")
            return
        }
        let finished = machine.finish([1])
        let setAfter = machine.setOnClose({})
        #expect(!finished && !setAfter && !machine.isUntouched)
    }

    @Test("a close while the producer writes the file leaves the release to the producer")
    func closesWhileWritingFile() {
        var machine = Self.fullAndBehind()
        _ = machine.write(Self.chunk(25), reserveDisk: { _ in true })
        let closed = machine.close()
        #expect(closed?.release == .init(memoryBytes: 0, diskBytes: 0))
        guard case .fail(let release, refused: false) = machine.fileWriteEnded(count: 25, created: 2, failed: false) else {
            Issue.record("the producer's write is taken after close")
            return
        }
        #expect(release == .init(memoryBytes: 10, diskBytes: 25))
    }

    @Test("the body is drained once nothing is spooled; a lost file drains it incomplete")
    func drains() {
        var machine = Self.spooling(memory: 100)
        _ = machine.write(Self.chunk(30), reserveDisk: { _ in true })
        let finished = machine.finish([9, 9])
        let drainedEarly = machine.whenDrained({ _ in })
        #expect(finished && drainedEarly == nil)
        let pumped = Self.pump(&machine)
        #expect(pumped.delivered == [30] && pumped.drained?.complete == true)
        #expect(machine.byteCount == 32 && machine.finishedRest == [9, 9])

        var lost = Self.fullAndBehind()
        _ = lost.write(Self.chunk(10), reserveDisk: { _ in true })
        _ = lost.fileWriteEnded(count: 10, created: 4, failed: false)
        _ = lost.writabilityChanged(true)
        let reading = Self.pump(&lost)
        let lostEarly = lost.whenDrained({ _ in })
        #expect(reading.read != nil && lostEarly == nil)
        guard case .lost(let drained) = lost.fileReadEnded(nil) else {
            Issue.record("an unreadable file is not a lost body")
            return
        }
        #expect(drained?.complete == false && drained?.release.diskBytes == 10)
    }

    @Test("an offer the channel cannot take keeps its callback for when it can")
    func offers() {
        var machine = Machine(maximumChunksInFlight: 1, spool: nil)
        let first = machine.offer(count: 5, whenWritable: {})
        #expect(first?.delivered == true && first?.isFirst == true)
        let second = machine.offer(count: 5, whenWritable: {})
        #expect(second?.delivered == false)
        let written = machine.chunkWritten(channelIsWritable: false)
        #expect(written == nil)
        let writable = machine.writabilityChanged(true)
        #expect(writable != nil)
        let writableAgain = machine.writabilityChanged(true)
        #expect(writableAgain == nil)
        _ = machine.close()
        let afterClose = machine.offer(count: 5, whenWritable: {})
        #expect(afterClose == nil)
    }
}
