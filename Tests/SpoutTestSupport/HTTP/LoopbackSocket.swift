import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Blocking TCP sockets to a server on 127.0.0.1, for tests that speak HTTP byte by byte.
public enum LoopbackSocket {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// A connected socket descriptor; the caller closes it.
    /// - Parameters:
    ///   - timeout: `SO_RCVTIMEO` and `SO_SNDTIMEO` in seconds, so a stuck server fails a test
    ///     instead of hanging it.
    ///   - receiveBuffer: `SO_RCVBUF`, set before connecting so the TCP window stays small and
    ///     a slow reader is felt by the server; nil keeps the kernel's default.
    ///   - sourceAddress: the local address to connect from (another loopback address such as
    ///     `127.0.0.2` plays a second client host); nil lets the kernel choose.
    public static func connect(
        port: Int, timeout: Double = 60, receiveBuffer: Int? = nil, sourceAddress: String? = nil
    ) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed: errno \(errno)") }
        var time = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        if var size = receiveBuffer.map(Int32.init) {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        if let sourceAddress {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(sourceAddress)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                let code = errno
                Glibc.close(fd)
                throw Failure(description: "bind() to \(sourceAddress) failed: errno \(code)")
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            Glibc.close(fd)
            throw Failure(description: "connect() to port \(port) failed: errno \(code)")
        }
        return fd
    }

    /// A socket listening on 127.0.0.1:`port` (`SO_REUSEADDR`, a backlog of 64), for a test's
    /// own server or proxy; the caller closes it.
    public static func listen(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed: errno \(errno)") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, 64) == 0 else {
            let code = errno
            close(fd)
            throw Failure(description: "bind/listen on port \(port) failed: errno \(code)")
        }
        return fd
    }

    /// Accepts connections on `listener` on a thread of its own, handing each to `handle` on a
    /// new thread, until the listener is shut or closed.
    public static func serveEach(on listener: Int32, _ handle: @escaping @Sendable (Int32) -> Void) {
        Thread {
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                Thread { handle(client) }.start()
            }
        }.start()
    }

    /// Copies bytes from `source` to `destination`, as a proxy does one way, until either side
    /// closes or `proceed` returns false; then shuts both. `proceed` is asked before each piece
    /// received is passed on, and may wait (a proxy holding traffic back).
    public static func pump(from source: Int32, to destination: Int32, proceed: () -> Bool = { true }) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        copying: while true {
            let count = recv(source, &buffer, buffer.count, 0)
            guard count > 0, proceed() else { break }
            var offset = 0
            while offset < count {
                let sent = buffer[offset..<count].withUnsafeBytes { send(destination, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard sent > 0 else { break copying }
                offset += sent
            }
        }
        shutdown(source, Int32(SHUT_RDWR))
        shutdown(destination, Int32(SHUT_RDWR))
    }
}
