import Dispatch
import Foundation
import Logging
import NIOCore
import Synchronization
import Testing

@testable import SpoutHTTP

/// ``StreamingResponseSink`` with a spool, driven by a fake channel: a serial queue stands for
/// the event loop, and the test decides when the "client" can take more (writability).
@Suite("The stream spool")
struct SpoolingSinkTests {
    /// A channel whose writability the test sets; every chunk it is handed is kept, in order.
    final class FakeChannel: Sendable {
        let loop = DispatchQueue(label: "fake event loop")
        private let state = Mutex(State())

        struct State {
            var writable = true
            var received: [UInt8] = []
            var chunks = 0
            var firstFlags: [Bool] = []
        }

        var hop: LoopHop { LoopHop(execute: { work in self.loop.async(execute: work) }) }

        var received: [UInt8] { self.loop.sync { self.state.withLock { $0.received } } }
        var firstFlags: [Bool] { self.loop.sync { self.state.withLock { $0.firstFlags } } }

        /// Delivers a chunk "to the socket" and reports the writability after it.
        func deliver(_ chunk: ByteBuffer, isFirst: Bool, to sink: StreamingResponseSink) {
            let writable = self.state.withLock { state in
                state.received.append(contentsOf: chunk.readableBytesView)
                state.chunks += 1
                state.firstFlags.append(isFirst)
                return state.writable
            }
            sink.chunkWritten(channelIsWritable: writable)
        }

        /// Changes the writability, as `channelWritabilityChanged` would, on the loop.
        func setWritable(_ writable: Bool, sink: StreamingResponseSink) {
            self.loop.sync {
                self.state.withLock { $0.writable = writable }
                sink.writabilityChanged(writable)
            }
        }
    }

    private static func makeSink(
        channel: FakeChannel, spool: SpoolService?
    ) -> StreamingResponseSink {
        let box = Mutex<StreamingResponseSink?>(nil)
        let sink = StreamingResponseSink(allocator: ByteBufferAllocator(), hop: channel.hop, spool: spool) { chunk, isFirst in
            channel.deliver(chunk, isFirst: isFirst, to: box.withLock { $0! })
        }
        box.withLock { $0 = sink }
        return sink
    }

    private static func makeSpool(_ configuration: SpoolConfiguration) -> SpoolService {
        let spool = SpoolService(
            configuration: configuration, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), metrics: nil)
        spool.start()
        return spool
    }

    /// `count` chunks of `size` bytes, each filled with its index (so order is checked).
    private static func chunks(_ count: Int, size: Int = 32 * 1024) -> [[UInt8]] {
        (0..<count).map { [UInt8](repeating: UInt8($0 % 251), count: size) }
    }

    @Test("a producer never waits for a client that stops reading: memory, then the file, then everything in order")
    func producerFinishesWhileClientIsStalled() async throws {
        let spool = Self.makeSpool(SpoolConfiguration(memoryBytesPerStream: 64 * 1024))
        let channel = FakeChannel()
        let sink = Self.makeSink(channel: channel, spool: spool)
        channel.setWritable(false, sink: sink)
        let chunks = Self.chunks(100)
        // Would block forever without a spool: the channel is never writable meanwhile.
        for chunk in chunks { try sink.write(chunk) }
        #expect(spool.current.disk > 0, "nothing went to the file")
        #expect(spool.current.memory <= 64 * 1024)
        let drained = Mutex(false)
        channel.loop.sync { sink.whenDrained { complete in drained.withLock { $0 = complete } } }
        #expect(!drained.withLock { $0 })

        channel.setWritable(true, sink: sink)
        let deadline = ContinuousClock.now + .seconds(30)
        while !drained.withLock({ $0 }) && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(drained.withLock { $0 })
        #expect(channel.received == chunks.flatMap { $0 })
        #expect(channel.firstFlags.first == true && channel.firstFlags.dropFirst().allSatisfy { !$0 })
        #expect(spool.current == SpoolService.Usage(disk: 0, memory: 0))
        await spool.shutdown()
    }

    @Test("a client that keeps up is never spooled")
    func keepingUpNeverSpools() async throws {
        let spool = Self.makeSpool(SpoolConfiguration())
        let channel = FakeChannel()
        let sink = Self.makeSink(channel: channel, spool: spool)
        let chunks = Self.chunks(50)
        for chunk in chunks {
            try sink.write(chunk)
            // The client takes each chunk before the next is written.
            channel.loop.sync {}
        }
        #expect(sink.snapshot.usedFile == false)
        #expect(channel.received == chunks.flatMap { $0 })
        await spool.shutdown()
    }

    @Test("past the per-stream cap the producer waits for the client (holding), and nothing is lost")
    func capMakesTheProducerHold() async throws {
        let spool = Self.makeSpool(SpoolConfiguration(memoryBytesPerStream: 32 * 1024, maximumBytesPerStream: 128 * 1024))
        let channel = FakeChannel()
        let sink = Self.makeSink(channel: channel, spool: spool)
        channel.setWritable(false, sink: sink)
        let chunks = Self.chunks(40)
        let written = Mutex(0)
        let producer = Thread {
            for chunk in chunks {
                try? sink.write(chunk)
                written.withLock { $0 += 1 }
            }
        }
        producer.start()
        // The producer gets as far as the caps allow, then waits.
        var stalledAt = -1
        for _ in 0..<200 {
            try await Task.sleep(for: .milliseconds(10))
            if sink.snapshot.spooledBytes >= 128 * 1024 { stalledAt = written.withLock { $0 }; break }
        }
        #expect(stalledAt >= 0 && stalledAt < chunks.count, "the producer did not stop at the cap (\(stalledAt))")
        #expect(spool.current.disk <= 128 * 1024)
        channel.setWritable(true, sink: sink)
        let deadline = ContinuousClock.now + .seconds(30)
        while written.withLock({ $0 }) < chunks.count && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        let drained = Mutex(false)
        channel.loop.sync { sink.whenDrained { complete in drained.withLock { $0 = complete } } }
        while !drained.withLock({ $0 }) && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(channel.received == chunks.flatMap { $0 })
        await spool.shutdown()
    }

    @Test("a directory that cannot take files: the stream holds instead, nothing is lost")
    func unusableDirectoryHolds() async throws {
        let spool = Self.makeSpool(SpoolConfiguration(directory: "/nonexistent-\(UUID().uuidString)", memoryBytesPerStream: 32 * 1024))
        let channel = FakeChannel()
        let sink = Self.makeSink(channel: channel, spool: spool)
        channel.setWritable(false, sink: sink)
        let chunks = Self.chunks(10)
        let done = Mutex(false)
        let producer = Thread {
            for chunk in chunks { try? sink.write(chunk) }
            done.withLock { $0 = true }
        }
        producer.start()
        try await Task.sleep(for: .milliseconds(100))
        #expect(!done.withLock { $0 }, "the producer did not wait")
        channel.setWritable(true, sink: sink)
        let deadline = ContinuousClock.now + .seconds(30)
        while !done.withLock({ $0 }) && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        channel.loop.sync {}
        #expect(channel.received == chunks.flatMap { $0 })
        #expect(spool.current.disk == 0)
        await spool.shutdown()
    }

    @Test("closing mid-spool drops memory and file and fails the producer")
    func closeDropsTheSpool() async throws {
        let spool = Self.makeSpool(SpoolConfiguration(memoryBytesPerStream: 32 * 1024))
        let channel = FakeChannel()
        let sink = Self.makeSink(channel: channel, spool: spool)
        channel.setWritable(false, sink: sink)
        for chunk in Self.chunks(20) { try sink.write(chunk) }
        #expect(spool.current.disk > 0)
        let cancelled = Mutex(false)
        sink.onClose { cancelled.withLock { $0 = true } }
        channel.loop.sync { sink.close() }
        #expect(cancelled.withLock { $0 })
        #expect(spool.current == SpoolService.Usage(disk: 0, memory: 0))
        #expect(throws: StreamingResponseSink.ChannelClosed.self) { try sink.write([1]) }
        await spool.shutdown()
    }
}
