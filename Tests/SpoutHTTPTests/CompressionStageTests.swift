import CZstd
import Foundation
import NIOCore
import Synchronization
import Testing

@testable import SpoutHTTP
import SpoutTestSupport

/// ``CompressionStage``: compression on a thread of its own beside the producer, with the
/// producer's backpressure, flushing and errors kept. Decoded by the real `zstd` and `gzip`
/// tools, and by libzstd for a body that is not finished yet.
@Suite("The compression stage")
struct CompressionStageTests {
    /// Collects what the stage delivers; `deliver` can be held shut by the test (a client that
    /// does not read) or made to fail.
    final class Target: CompressedBodyTarget, @unchecked Sendable {
        // `@unchecked Sendable`: every field is guarded by `condition`.
        private let condition = NSCondition()
        private var bytes: [UInt8] = []
        private var isFinished = false
        private var threads: Set<String> = []
        private var niceValues: Set<Int32> = []
        private var isGateOpen = true
        private var waitingAtGate = false
        private var failure: (any Error)?

        func deliverCompressed(_ bytes: [UInt8]) throws {
            self.condition.lock()
            defer { self.condition.unlock() }
            self.threads.insert(Self.threadName)
            self.niceValues.insert(Self.niceValue)
            if let failure = self.failure { throw failure }
            while !self.isGateOpen {
                self.waitingAtGate = true
                self.condition.wait()
            }
            self.waitingAtGate = false
            self.bytes += bytes
        }

        func finishCompressed(_ bytes: [UInt8]) throws {
            self.condition.lock()
            defer { self.condition.unlock() }
            self.threads.insert(Self.threadName)
            if let failure = self.failure { throw failure }
            self.bytes += bytes
            self.isFinished = true
        }

        static var threadName: String { "\(pthread_self())" }
        /// The calling thread's nice value (Linux keeps one per thread; elsewhere 0).
        static var niceValue: Int32 {
            #if os(Linux)
            getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
            #else
            0
            #endif
        }

        func locked<T>(_ body: (Target) -> T) -> T {
            self.condition.lock()
            defer { self.condition.unlock() }
            return body(self)
        }

        var received: [UInt8] { self.locked { $0.bytes } }
        var finished: Bool { self.locked { $0.isFinished } }
        var deliveringThreads: Set<String> { self.locked { $0.threads } }
        var deliveringNiceValues: Set<Int32> { self.locked { $0.niceValues } }
        var isWaitingAtGate: Bool { self.locked { $0.waitingAtGate } }

        func setGate(open: Bool) {
            self.locked { target in
                target.isGateOpen = open
                target.condition.broadcast()
            }
        }

        func failDeliveries(with error: any Error) {
            self.locked { $0.failure = error }
        }
    }

    struct Refused: Error, Equatable {}

    /// `count` chunks of JSON-like rows, about `ChunkedOutput`'s 32 KiB each, all different.
    static func chunks(_ count: Int) -> [[UInt8]] {
        (0..<count).map { index in
            var text = ""
            var row = 0
            while text.utf8.count < 32 * 1024 {
                text += "{\"emp_no\":\(10001 + index * 1000 + row),\"salary\":\(40000 + (index * 7919 + row * 104729) % 90000)},"
                row += 1
            }
            return Array(text.utf8)
        }
    }

    /// `bytes` in `coding`, decoded by a real decoder (not the code under test).
    static func decode(_ bytes: [UInt8], _ coding: ContentCoding) throws -> [UInt8] {
        switch coding {
        case .zstd: try unzstd(bytes)
        case .gzip: try gunzip(bytes)
        case .deflate: try inflate(bytes)
        }
    }

    /// A stage of `coding` delivering into a new ``Target``.
    static func stage(_ coding: ContentCoding, maximumQueued: Int = 2) throws -> (CompressionStage, Target) {
        let stage = CompressionStage(encoder: try coding.makeEncoder(), maximumQueued: maximumQueued)
        let target = Target()
        stage.attach(to: target)
        return (stage, target)
    }

    /// Decodes what a zstd stream holds so far (a frame not ended yet), with libzstd.
    static func zstdPrefix(_ bytes: [UInt8]) throws -> [UInt8] {
        guard let context = ZSTD_createDCtx() else { throw Refused() }
        defer { ZSTD_freeDCtx(context) }
        var decoded: [UInt8] = []
        var output = [UInt8](repeating: 0, count: ZSTD_DStreamOutSize())
        try bytes.withUnsafeBytes { input in
            var inBuffer = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: 0)
            while true {
                let (status, produced) = output.withUnsafeMutableBytes { output in
                    var outBuffer = ZSTD_outBuffer(dst: output.baseAddress, size: output.count, pos: 0)
                    let status = ZSTD_decompressStream(context, &outBuffer, &inBuffer)
                    return (status, outBuffer.pos)
                }
                guard ZSTD_isError(status) == 0 else { throw Refused() }
                decoded += output[0..<produced]
                if inBuffer.pos == inBuffer.size && produced < output.count { break }
            }
        }
        return decoded
    }

    @Test("Chunks are compressed on a thread of their own and decode to exactly the body", arguments: ContentCoding.allCases)
    func compressesBesideTheProducer(_ coding: ContentCoding) async throws {
        try await onThread {
            let (stage, target) = try Self.stage(coding)
            let chunks = Self.chunks(40)
            for chunk in chunks { try stage.write(chunk) }
            try stage.finish(Array("{\"last\":true}]".utf8))
            #expect(target.finished)
            #expect(try Self.decode(target.received, coding) == chunks.flatMap { $0 } + Array("{\"last\":true}]".utf8))
            #expect(!target.deliveringThreads.contains(Target.threadName), "the producer's thread compressed")
            #if os(Linux)
            // Below the producer's priority: small requests go first on busy cores.
            #expect(target.deliveringNiceValues == [min(19, Target.niceValue + CompressionStage.niceness)])
            #endif
            #expect(target.received.count < chunks.count * 32 * 1024 / 4)
        }
    }

    @Test("A body given only to finish is compressed on the producer's thread", arguments: ContentCoding.allCases)
    func smallBodyNeedsNoThread(_ coding: ContentCoding) async throws {
        try await onThread {
            let (stage, target) = try Self.stage(coding)
            try stage.finish(Array("[{\"emp_no\":10001}]".utf8))
            #expect(target.deliveringThreads == [Target.threadName])
            #expect(try Self.decode(target.received, coding) == Array("[{\"emp_no\":10001}]".utf8))
        }
    }

    @Test(
        "Once the stage runs out of input it flushes: what the client has decodes to every chunk written",
        arguments: ContentCoding.allCases)
    func flushesWhenIdle(_ coding: ContentCoding) async throws {
        try await onThread {
            let (stage, target) = try Self.stage(coding)
            var written: [UInt8] = []
            for chunk in Self.chunks(3) {
                try stage.write(chunk)
                written += chunk
                try waitUntil("the target has every row written so far", within: .seconds(10)) {
                    try Self.decodePrefix(target.received, coding) == written
                }
            }
            try stage.finish([])
            #expect(try Self.decode(target.received, coding) == written)
        }
    }

    /// Decodes what a stream of `coding` that has not ended holds so far.
    static func decodePrefix(_ bytes: [UInt8], _ coding: ContentCoding) throws -> [UInt8] {
        switch coding {
        case .zstd: try Self.zstdPrefix(bytes)
        case .gzip: try inflatePrefix(bytes, gzip: true)
        case .deflate: try inflatePrefix(bytes, gzip: false)
        }
    }

    /// A zstd stage whose client does not read, with its queue full: the compressor holds the
    /// first of `chunks`, the next `maximumQueued` wait in the queue; the rest are not written.
    static func fullStage(maximumQueued: Int, chunks: [[UInt8]]) async throws -> (CompressionStage, Target) {
        let (stage, target) = try Self.stage(.zstd, maximumQueued: maximumQueued)
        target.setGate(open: false)
        try await onThread {
            try stage.write(chunks[0])
            try waitUntil("the compressor waits for the client") { target.isWaitingAtGate }
            for chunk in chunks[1...maximumQueued] { try stage.write(chunk) }
        }
        return (stage, target)
    }

    @Test("A client that does not read holds the producer once the queue is full, and lets it go on when it reads")
    func backpressureReachesTheProducer() async throws {
        let chunks = Self.chunks(4)
        let (stage, target) = try await Self.fullStage(maximumQueued: 2, chunks: chunks)
        let fourthReturned = Atomic(false)
        let fourth = Task {
            try await onThread {
                try stage.write(chunks[3])
                fourthReturned.store(true, ordering: .sequentiallyConsistent)
            }
        }
        // The fourth write must wait; give it time to (wrongly) return.
        try await Task.sleep(for: .milliseconds(300))
        let wentOn = fourthReturned.load(ordering: .sequentiallyConsistent)
        #expect(!wentOn, "the producer went on past a full queue")
        target.setGate(open: true)
        try await fourth.value
        try await onThread { try stage.finish([]) }
        #expect(try unzstd(target.received) == chunks.flatMap { $0 })
    }

    @Test("The target's error stops the compressor and reaches the producer's next call")
    func targetErrorReachesTheProducer() async throws {
        try await onThread {
            let (stage, target) = try Self.stage(.gzip)
            target.failDeliveries(with: Refused())
            #expect(throws: Refused.self) {
                for chunk in Self.chunks(6) { try stage.write(chunk) }
                try stage.finish([])
            }
            #expect(!target.finished)
            #expect(throws: Refused.self) { try stage.write(Self.chunks(1)[0]) }
        }
    }

    @Test("Cancelling (the channel went away) wakes a producer waiting for room, which throws ChannelClosed")
    func cancelWakesTheProducer() async throws {
        let chunks = Self.chunks(3)
        let (stage, target) = try await Self.fullStage(maximumQueued: 1, chunks: chunks)
        let blocked = Task { try await onThread { try stage.write(chunks[2]) } }
        try await Task.sleep(for: .milliseconds(100))
        stage.cancel()
        await #expect(throws: StreamingResponseSink.ChannelClosed.self) { try await blocked.value }
        #expect(throws: StreamingResponseSink.ChannelClosed.self) { try stage.finish([]) }
        target.setGate(open: true)
        #expect(!target.finished)
    }

    /// A stream that failed mid-body: the connection handler closes the sink, and the stage
    /// must end whether it waits in the sink for a client that does not read or for more input
    /// from a producer that is gone; what it held is dropped.
    @Test("Closing a compressed sink ends its stage", arguments: [false, true])
    func closingTheSinkEndsTheStage(clientReads: Bool) async throws {
        let channel = SpoolingSinkTests.FakeChannel()
        let box = Mutex<StreamingResponseSink?>(nil)
        let sink = StreamingResponseSink(
            allocator: ByteBufferAllocator(), hop: channel.hop, maximumChunksInFlight: 1, encoder: try ContentCoding.gzip.makeEncoder()
        ) { chunk, isFirst in
            channel.deliver(chunk, isFirst: isFirst, to: box.withLock { $0! })
        }
        box.withLock { $0 = sink }
        channel.setWritable(clientReads, sink: sink)
        let stage = try #require(sink.compression)
        try await onThread {
            for chunk in Self.chunks(3) { try sink.write(chunk) }
            if clientReads {
                // Everything compressed and handed over: the stage waits for more input.
                try waitUntil("the client has every chunk so far") { !channel.received.isEmpty && sink.snapshot.chunkCount > 0 }
                usleep(50_000)
            } else {
                try waitUntil("the compressor waits for the channel") { sink.snapshot.isWaitingForWritability }
            }
        }
        #expect(!stage.hasStopped)
        sink.close()
        #expect(try await eventually(within: .seconds(10)) { stage.hasStopped }, "the compressor still waits")
        #expect(throws: StreamingResponseSink.ChannelClosed.self) { try sink.write(Self.chunks(1)[0]) }
        if !clientReads { #expect(channel.received.isEmpty) }
    }

    @Test("A target that is gone takes nothing more: the producer is told the channel closed")
    func goneTargetClosesTheStream() async throws {
        try await onThread {
            let stage = CompressionStage(encoder: try ContentCoding.zstd.makeEncoder())
            do {
                let target = Target()
                stage.attach(to: target)
            }
            #expect(throws: StreamingResponseSink.ChannelClosed.self) {
                for chunk in Self.chunks(4) { try stage.write(chunk) }
                try stage.finish([])
            }
        }
    }
}
