#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOPosix
import SpoutCore

/// Hands log lines to an output (standard error, ``standardError``), gathering the lines an
/// event loop's thread logs during one turn of its loop into one call.
///
/// The access log writes a line per request; under load an event loop finishes several
/// requests per turn (every response the PostgreSQL reactor handed back since the last one),
/// and a `write(2)` per line was a measurable part of a small request's CPU. Contract:
/// - A line logged on an event loop's thread reaches the output before that loop waits for
///   I/O again (a task queued on the same loop, which costs no wake-up), in the order it was
///   logged, and never split. Once ``flushThreshold`` bytes are pending they go at once.
/// - A line logged on any other thread goes to the output at once.
/// - Lines from different threads keep their order within a thread only (as when each thread
///   wrote for itself).
/// What a crash loses is at most the lines of a loop's current turn.
final class StandardErrorWriter: Sendable {
    /// The lines a thread's event loop has not handed over yet.
    // Unchecked: each instance is reached only through its own thread's thread-specific
    // variable and from tasks on that thread's event loop, so never from two threads.
    private final class Pending: @unchecked Sendable {
        var bytes: [UInt8] = []
    }

    /// The process's standard error. A write that fails drops the rest of its batch: a log
    /// must not stop the server.
    static let standardError = StandardErrorWriter { _ = DescriptorWrite.all($0, to: 2) }

    static let flushThreshold = 64 * 1024

    private let pending = ThreadSpecificVariable<Pending>()
    private let output: @Sendable ([UInt8]) -> Void

    /// A writer handing its batches to `output` (for tests; the server uses ``standardError``).
    init(output: @escaping @Sendable ([UInt8]) -> Void) {
        self.output = output
    }

    func write(_ line: [UInt8]) {
        guard let loop = MultiThreadedEventLoopGroup.currentEventLoop else {
            self.output(line)
            return
        }
        let pending: Pending
        if let existing = self.pending.currentValue {
            pending = existing
        } else {
            pending = Pending()
            self.pending.currentValue = pending
        }
        let wasEmpty = pending.bytes.isEmpty
        pending.bytes.append(contentsOf: line)
        if pending.bytes.count >= Self.flushThreshold {
            self.flush(pending)
        } else if wasEmpty {
            // Runs on this thread, after the loop's current work, before it sleeps.
            loop.assumeIsolated().execute { self.flush(pending) }
        }
    }

    private func flush(_ pending: Pending) {
        guard !pending.bytes.isEmpty else { return }
        self.output(pending.bytes)
        pending.bytes.removeAll(keepingCapacity: pending.bytes.capacity <= 2 * Self.flushThreshold)
    }
}
