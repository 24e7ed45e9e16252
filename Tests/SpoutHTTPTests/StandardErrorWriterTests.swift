import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import SpoutHTTP

/// Log lines logged on an event loop go out once per turn of the loop, whole and in order;
/// lines from other threads go out at once.
@Suite struct StandardErrorWriterTests {
    private final class Outputs: Sendable {
        let calls = Mutex<[[UInt8]]>([])
        var strings: [String] { self.calls.withLock { $0.map { String(decoding: $0, as: UTF8.self) } } }
    }

    @Test func linesOfOneTurnOfALoopGoOutInOneCallAfterIt() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let outputs = Outputs()
        let writer = StandardErrorWriter { bytes in outputs.calls.withLock { $0.append(bytes) } }
        let seenDuringTheTurn = try await loop.submit {
            writer.write(Array("one\n".utf8))
            writer.write(Array("two\n".utf8))
            writer.write(Array("three\n".utf8))
            return outputs.strings
        }.get()
        #expect(seenDuringTheTurn.isEmpty, "nothing is written while the loop is still busy")
        // The flush was queued behind the task: a later task on the same loop sees it done.
        let after = try await loop.submit { outputs.strings }.get()
        #expect(after == ["one\ntwo\nthree\n"])

        // The next turn starts a batch of its own.
        try await loop.submit { writer.write(Array("four\n".utf8)) }.get()
        #expect(try await loop.submit { outputs.strings }.get() == ["one\ntwo\nthree\n", "four\n"])
    }

    @Test func linesFromOtherThreadsGoOutAtOnce() {
        let outputs = Outputs()
        let writer = StandardErrorWriter { bytes in outputs.calls.withLock { $0.append(bytes) } }
        writer.write(Array("a\n".utf8))
        writer.write(Array("b\n".utf8))
        #expect(outputs.strings == ["a\n", "b\n"])
    }

    @Test func aLargeBatchGoesOutWithoutWaitingForTheTurnToEnd() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let outputs = Outputs()
        let writer = StandardErrorWriter { bytes in outputs.calls.withLock { $0.append(bytes) } }
        let line = Array(repeating: UInt8(ascii: "x"), count: 1023) + [UInt8(ascii: "\n")]
        let lines = StandardErrorWriter.flushThreshold / line.count
        let calls = try await loop.submit {
            for _ in 0..<lines { writer.write(line) }
            return outputs.calls.withLock { $0.map(\.count) }
        }.get()
        #expect(calls == [lines * line.count])
    }
}
