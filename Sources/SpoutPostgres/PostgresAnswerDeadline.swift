import SpoutCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How long one PostgreSQL connection may wait for its server's answer, and whether it waits.
///
/// A server that stops answering without closing its connections (stopped or frozen, a paused
/// virtual machine, a network that drops packets) leaves libpq waiting for ever: PostgreSQL's
/// own `statement_timeout` needs a server that runs. So every wait for an answer is bounded
/// here as well, by the statement timeout in effect (once per statement waited for) plus a
/// grace period; the reactor's deadline timer (``PostgresReactor/watch(_:)``) shuts the socket
/// of a connection past its deadline,
/// which ends the wait in libpq as a lost connection (``PostgresConnection/makeError(_:)``
/// then reports ``SpoutCore/DatabaseError/Code/notAnswering``).
///
/// Contract:
/// - Only a thread waiting for the server sets a deadline (``begin(statements:)`` before the
///   wait, ``end()`` after it): a connection that waits for its client (a stream written at
///   the client's pace) or sits idle in the pool is never shut.
/// - No deadline without a statement timeout (``setStatementTimeout(milliseconds:)`` with 0)
///   or without a grace period: such a wait is as long as libpq's.
/// - The socket is shut at most once, and never after ``retire()`` (called before the
///   connection is closed, so a descriptor number reused by another socket is never touched).
/// - A deadline with a grace period is watched by ``PostgresReactor`` from its creation until
///   ``retire()``, and shut at most ``PostgresReactor/deadlineInterval`` after it passed.
///   (Linux only, like the reactor: elsewhere no deadline is enforced.) ``begin(statements:)``
///   and ``end()`` are two atomic stores, no system call, which is why the reactor checks the
///   deadlines on a periodic timer rather than arming one per wait.
final class PostgresAnswerDeadline: Sendable {
    /// The connection's socket, fixed for its life.
    let socket: Int32
    /// The grace period past the statement timeout, in nanoseconds; 0 for no deadline.
    private let grace: UInt64
    /// The statement timeout in effect, in nanoseconds; 0 for none.
    private let statementTimeout = Atomic<UInt64>(0)
    /// When the current wait ends (monotonic nanoseconds); 0 while nobody waits.
    private let deadline = Atomic<UInt64>(0)
    /// Retired (the connection is closing) and expired (the socket was shut).
    private let state = Mutex<(retired: Bool, expired: Bool)>((false, false))

    init(socket: Int32, graceMilliseconds: Int) {
        self.socket = socket
        self.grace = UInt64(max(0, graceMilliseconds)) &* 1_000_000
        #if os(Linux)
        if self.grace != 0 {
            PostgresReactor.shared.watch(self)
        }
        #endif
    }

    /// Records the statement timeout the connection's statements run under (0: none).
    func setStatementTimeout(milliseconds: Int) {
        self.statementTimeout.store(UInt64(max(0, milliseconds)) &* 1_000_000, ordering: .relaxed)
    }

    /// Starts a wait for the answers of `statements` statements. Returns false when a wait is
    /// already under way (an outer call owns it) or no deadline applies; call ``end()`` only
    /// after a true.
    @inline(__always)
    func begin(statements: Int = 1) -> Bool {
        let timeout = self.statementTimeout.load(ordering: .relaxed)
        guard timeout != 0, self.grace != 0, self.deadline.load(ordering: .relaxed) == 0 else { return false }
        let deadline = Self.now() &+ timeout &* UInt64(max(1, statements)) &+ self.grace
        self.deadline.store(deadline, ordering: .releasing)
        return true
    }

    /// Ends the wait started by the last ``begin(statements:)`` that returned true.
    @inline(__always)
    func end() {
        self.deadline.store(0, ordering: .releasing)
    }

    /// Runs `body`, a wait for the answers of `statements` statements, between
    /// ``begin(statements:)`` and ``end()``. A wait inside another is bounded by the outer one.
    @inline(__always)
    func bounding<Result>(statements: Int = 1, _ body: () throws -> Result) rethrows -> Result {
        let waits = self.begin(statements: statements)
        defer { if waits { self.end() } }
        return try body()
    }

    /// Whether the socket was shut because the server did not answer in time.
    var hasExpired: Bool {
        self.state.withLock { $0.expired }
    }

    /// Stops the reactor from touching the socket, and from watching; call before the
    /// connection closes it.
    func retire() {
        self.state.withLock { $0.retired = true }
        #if os(Linux)
        if self.grace != 0 {
            PostgresReactor.shared.forget(self)
        }
        #endif
    }

    /// The reactor's check: shuts the socket when a wait is past its deadline at `now`.
    /// Returns true when it did.
    func expireIfOverdue(now: UInt64) -> Bool {
        let deadline = self.deadline.load(ordering: .acquiring)
        guard deadline != 0, now >= deadline else { return false }
        return self.state.withLock { state in
            // Checked again under the lock: the wait may have ended, the connection closed.
            guard !state.retired, !state.expired, self.deadline.load(ordering: .acquiring) == deadline else { return false }
            state.expired = true
            // Both directions: the waiting `poll`/`recv` (libpq's, or the reactor's epoll)
            // returns at once with the end of the stream, and nothing more is sent.
            _ = shutdown(self.socket, Int32(SHUT_RDWR))
            return true
        }
    }

    /// Monotonic nanoseconds, coarse (a few milliseconds; no system call): enough for
    /// deadlines of seconds.
    @inline(__always)
    static func now() -> UInt64 {
        var time = timespec()
        #if os(Linux)
        clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
        #else
        clock_gettime(CLOCK_MONOTONIC, &time)
        #endif
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
