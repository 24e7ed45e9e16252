import Foundation
import SpoutTestSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy on loopback in front of a server that can be frozen: while frozen it takes
/// every byte (and every new connection) and passes none on, keeping all sockets open. To
/// its clients the server has stopped answering without closing anything, as a stopped or
/// paused server, or one behind a network that drops packets, looks; ``thaw()`` lets
/// everything through again, in order.
final class FreezingProxy: Sendable {
    let port: Int
    private let listener: Int32
    private let state = Mutex<(frozen: Bool, stopped: Bool, sockets: [Int32])>((false, false, []))

    init(upstreamPort: Int) throws {
        self.port = try ThrowawayPostgres.freePort()
        self.listener = try LoopbackSocket.listen(port: self.port)
        LoopbackSocket.serveEach(on: self.listener) { [self] client in self.serve(client, upstreamPort: upstreamPort) }
    }

    /// Stops passing anything on (bytes already passed stay passed).
    func freeze() {
        self.state.withLock { $0.frozen = true }
    }

    /// Passes on what was held, and everything after it.
    func thaw() {
        self.state.withLock { $0.frozen = false }
    }

    /// Closes the listener and shuts every connection. (Their descriptors are never closed
    /// before, so none of them is reused meanwhile by a socket this must not touch.)
    func stop() {
        let sockets = self.state.withLock { state -> [Int32] in
            state.stopped = true
            state.frozen = false
            defer { state.sockets = [] }
            return state.sockets
        }
        shutdown(self.listener, Int32(SHUT_RDWR))
        close(self.listener)
        for socket in sockets { shutdown(socket, Int32(SHUT_RDWR)) }
    }

    /// Waits while frozen; false once stopped.
    private func waitWhileFrozen() -> Bool {
        while true {
            let (frozen, stopped) = self.state.withLock { ($0.frozen, $0.stopped) }
            if stopped { return false }
            if !frozen { return true }
            usleep(10_000)
        }
    }

    private func serve(_ client: Int32, upstreamPort: Int) {
        self.state.withLock { $0.sockets.append(client) }
        // A connection that arrives while frozen is accepted (the kernel would) and held.
        guard self.waitWhileFrozen(), let upstream = try? LoopbackSocket.connect(port: upstreamPort, timeout: 3600) else {
            shutdown(client, Int32(SHUT_RDWR))
            return
        }
        self.state.withLock { $0.sockets.append(upstream) }
        Thread { [self] in LoopbackSocket.pump(from: upstream, to: client, proceed: self.waitWhileFrozen) }.start()
        LoopbackSocket.pump(from: client, to: upstream, proceed: self.waitWhileFrozen)
    }
}
