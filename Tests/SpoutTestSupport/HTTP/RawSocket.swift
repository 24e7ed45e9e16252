import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A blocking TCP connection to `127.0.0.1`, for tests that need exact control of the bytes
/// sent and of when (and how) the client goes away.
///
/// Contract: every call blocks the calling thread, at most `timeout` for each receive; use it
/// from a thread of its own (see ``onThread(_:)``), never from a Swift concurrency thread that
/// other tests need. Not thread-safe: one thread at a time.
public final class RawSocket {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public init(description: String) { self.description = description }
    }

    public private(set) var fd: Int32
    /// Bytes received so far by ``receive(atLeast:)``, ``receiveUntilClosed()`` and friends.
    public private(set) var received: [UInt8] = []
    /// Whether the server closed its side (a receive returned 0 or failed with a reset).
    public private(set) var peerClosed = false

    /// Connects to `port` on the loopback address.
    /// - Parameters:
    ///   - timeout: the receive timeout of each `recv` (no hang: a test fails instead).
    ///   - receiveBuffer: `SO_RCVBUF` to set before connecting (small values make a slow reader
    ///     exert backpressure sooner); nil keeps the system default.
    ///   - sourceAddress: a loopback address to connect from (`127.0.0.2`: another client).
    public init(port: Int, timeout: TimeInterval = 30, receiveBuffer: Int? = nil, sourceAddress: String? = nil) throws {
        do {
            self.fd = try LoopbackSocket.connect(port: port, timeout: timeout, receiveBuffer: receiveBuffer, sourceAddress: sourceAddress)
        } catch {
            self.fd = -1
            throw Failure(description: "\(error)")
        }
    }

    deinit {
        if self.fd >= 0 { Glibc.close(self.fd) }
    }

    /// Sends every byte (throws when the server has gone away before taking them).
    public func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(self.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw Failure(description: "send() failed: errno \(errno)") }
            sent += count
        }
    }

    public func send(_ text: String) throws {
        try self.send(Array(text.utf8))
    }

    /// Receives once (up to `limit` bytes), appending to ``received``; returns the count, 0 at
    /// end of stream. A reset by the server counts as the end of the stream.
    @discardableResult
    public func receiveOnce(limit: Int = 64 * 1024) throws -> Int {
        var buffer = [UInt8](repeating: 0, count: limit)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(self.fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && errno == ECONNRESET {
                self.peerClosed = true
                return 0
            }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                throw Failure(description: "receive timed out after \(self.received.count) bytes")
            }
            guard count >= 0 else { throw Failure(description: "recv() failed: errno \(errno)") }
            if count == 0 { self.peerClosed = true }
            self.received.append(contentsOf: buffer[0..<count])
            return count
        }
    }

    /// Receives what has arrived, without waiting: the byte count, 0 at end of stream, nil when
    /// nothing is there yet. At most `retain` bytes are kept in ``received`` (slow readers of
    /// huge streams count bytes in ``totalReceived`` without keeping them).
    public func receiveAvailable(limit: Int = 8 * 1024, retain: Int = 4 * 1024) -> Int? {
        var buffer = [UInt8](repeating: 0, count: limit)
        let count = buffer.withUnsafeMutableBytes { recv(self.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if count < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return nil }
            self.peerClosed = true
            return 0
        }
        if count == 0 { self.peerClosed = true }
        self.totalReceived += count
        let room = max(0, retain - self.received.count)
        if room > 0 { self.received.append(contentsOf: buffer[0..<min(room, count)]) }
        return count
    }

    /// Bytes received by ``receiveAvailable(limit:retain:)`` (kept or not).
    public private(set) var totalReceived = 0

    /// Receives until at least `count` bytes arrived in all, or the server closed.
    public func receive(atLeast count: Int) throws {
        while self.received.count < count {
            if try self.receiveOnce() == 0 { return }
        }
    }

    /// Receives until the server closes the connection.
    public func receiveUntilClosed() throws {
        while try self.receiveOnce() > 0 {}
    }

    /// Removes the first `count` received bytes (a response read off a kept-alive connection).
    public func consume(_ count: Int) {
        self.received.removeFirst(min(count, self.received.count))
    }

    /// Ends the sending side (the server reads end of stream) and keeps receiving.
    public func shutdownWrite() {
        if self.fd >= 0 { shutdown(self.fd, Int32(SHUT_WR)) }
    }

    /// Closes the connection. With `reset`, sets a zero linger first so that the kernel sends
    /// RST instead of FIN (the abrupt way a crashed client goes away).
    public func close(reset: Bool = false) {
        guard self.fd >= 0 else { return }
        if reset {
            var option = linger(l_onoff: 1, l_linger: 0)
            setsockopt(self.fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        }
        Glibc.close(self.fd)
        self.fd = -1
    }
}

