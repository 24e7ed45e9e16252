/// What a task waits for on its socket: the reactor translates it to epoll events, the
/// blocking driver (``PostgresEventDrivenRun/runBlocking()``) to `poll(2)` events.
struct SocketInterest: OptionSet, Sendable {
    let rawValue: UInt8

    /// Data (or an error, or the peer's close) can be read.
    static let readable = SocketInterest(rawValue: 1)
    /// The socket takes more bytes.
    static let writable = SocketInterest(rawValue: 2)
}

/// Something the reactor drives: it owns one socket while it is watched.
protocol PostgresReactorTask: AnyObject {
    /// The socket the task is watched on.
    var socket: Int32 { get }
    /// `events` arrived on the socket (on the reactor thread). Returns what to wait for next,
    /// or nil when the task is over.
    func handle(events: SocketInterest) -> SocketInterest?
    /// Called once the task is over and its socket no longer watched (on the reactor thread).
    func complete()
    /// Whether the task's socket is still open (libpq closes it when the connection is lost;
    /// the kernel then forgets it, and the descriptor may already belong to another socket).
    var socketIsOpen: Bool { get }
}
