import NIOCore
import Synchronization

/// The idle keep-alive connections of one ``NIOHTTPTransport``, by origin (scheme, host,
/// port), at most ``maximumIdlePerOrigin`` of each.
///
/// The pool only holds connections between exchanges: ``take(_:)`` hands one out for an
/// exchange, and ``parkReusable(_:)`` or ``release(_:)`` takes it back once its body ended on
/// a response that allows keep-alive. A connection that closes while parked (the server's idle timeout, the client's
/// own, a reset) leaves the pool by itself; a body given up before its end never comes back
/// (its connection is closed, since unread bytes would be taken for the next response).
/// Connections in use are not counted: concurrent calls beyond the bound open more, and those
/// are closed instead of parked when the pool is full.
final class ConnectionPool: Sendable {
    /// Where a connection goes: connections are only shared between requests to the same one.
    struct Origin: Hashable, Sendable, CustomStringConvertible {
        var scheme: String
        var host: String
        var port: Int

        var isSecure: Bool { self.scheme == "https" }
        var description: String { "\(self.scheme)://\(self.host):\(self.port)" }
    }

    /// One connection and its last handler.
    struct Connection: Sendable {
        let channel: any Channel
        let handler: NIOLoopBound<ResponseStreamHandler>
        let origin: Origin
    }

    let maximumIdlePerOrigin: Int
    let idleTimeout: TimeAmount
    private let idle = Mutex<[Origin: [Connection]]>([:])
    private let opened = Atomic<Int>(0)

    init(maximumIdlePerOrigin: Int, idleTimeout: TimeAmount) {
        self.maximumIdlePerOrigin = max(0, maximumIdlePerOrigin)
        self.idleTimeout = idleTimeout
    }

    deinit {
        for connection in self.idle.withLock({ $0.values.joined() }) { connection.channel.close(promise: nil) }
    }

    /// How many connections this transport has opened in all (for tests and diagnostics).
    var connectionsOpened: Int { self.opened.load(ordering: .relaxed) }

    /// Counts a new connection, and forgets it when it closes while parked.
    func register(_ channel: any Channel) {
        self.opened.add(1, ordering: .relaxed)
        channel.closeFuture.whenComplete { [weak self] _ in self?.remove(channel) }
    }

    /// The most recently parked open connection to `origin`, removed from the pool; nil when
    /// there is none.
    func take(_ origin: Origin) -> Connection? {
        self.idle.withLock { idle in
            while let connection = idle[origin]?.popLast() {
                if connection.channel.isActive { return connection }
            }
            return nil
        }
    }

    /// Parks a connection whose body ended on its event loop with
    /// ``ResponseStreamHandler/isReusable`` true, or closes it when the pool is full.
    ///
    /// Synchronous, so that the caller's next request finds it: the handler's idle state is
    /// set on the event loop by a task enqueued here, before any exchange a later ``take(_:)``
    /// can submit to the same loop.
    func parkReusable(_ connection: Connection) {
        let parked = self.idle.withLock { idle -> Bool in
            guard idle[connection.origin, default: []].count < self.maximumIdlePerOrigin else { return false }
            idle[connection.origin, default: []].append(connection)
            return true
        }
        let channel = connection.channel
        guard parked else {
            channel.close(promise: nil)
            return
        }
        let idleTimeout = self.idleTimeout
        channel.eventLoop.execute {
            connection.handler.value.park(idleTimeout: idleTimeout)
        }
    }

    /// Parks `connection` if its exchange ended cleanly (checked on its event loop), closes
    /// it otherwise: a body given up before its end, a failure, `Connection: close`.
    func release(_ connection: Connection) {
        connection.channel.eventLoop.execute {
            if connection.handler.value.isReusable {
                self.parkReusable(connection)
            } else {
                connection.channel.close(promise: nil)
            }
        }
    }

    /// Forgets a parked connection that closed.
    private func remove(_ channel: any Channel) {
        self.idle.withLock { idle in
            for origin in idle.keys {
                idle[origin]?.removeAll { $0.channel === channel }
            }
        }
    }
}
