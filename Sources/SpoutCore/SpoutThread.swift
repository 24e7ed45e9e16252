import Foundation

/// The one way Spout starts a thread of its own: the database's threads (`DatabaseThreads`),
/// the PostgreSQL reactor, a compressed stream's compressor and a spooled body's feeder. (The
/// event loops and the spool's `NIOThreadPool`s are SwiftNIO's.) docs/ARCHITECTURE.md lists
/// every thread by name.
public enum SpoutThread {
    /// Starts `body` on a new thread named `name` for the system (``ThreadName``: `top -H`,
    /// `ps -L` and `perf` show it), with a stack of `stackSize` bytes when given.
    public static func start(named name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            ThreadName.setCurrent(name)
            body()
        }
        if let stackSize { thread.stackSize = stackSize }
        thread.start()
    }

    /// Runs `body` on a new thread named `name` and waits, without blocking the caller's
    /// thread, for what it returned or threw.
    public static func result<T: Sendable>(named name: String, _ body: @escaping @Sendable () throws -> T) async -> Result<T, any Error> {
        await withCheckedContinuation { continuation in
            Self.start(named: name) { continuation.resume(returning: Result { try body() }) }
        }
    }
}
