import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A kept-alive HTTP/1.1 connection to 127.0.0.1 for tests that send several requests on one
/// connection, pipeline them, read slowly, or watch whether the server keeps or closes the
/// connection: ``RawHTTP``'s requests and parser over one ``RawSocket``.
///
/// The synchronous calls block; the async ones (and ``run(_:)``) run them on a thread of their
/// own (``onThread(_:)``), so no cooperative thread waits for the server.
///
/// `@unchecked Sendable`: a connection is used by one test, one call at a time (each async call
/// awaits its blocking work before returning), so its socket and buffer are never touched by
/// two threads at once.
public final class HTTPTestConnection: @unchecked Sendable {
    private let socket: RawSocket

    /// Connects to 127.0.0.1:`port` (blocking). `receiveBufferSize` shrinks the socket's receive
    /// buffer before connecting (so the TCP window stays small) to make a slow reader felt.
    public init(port: Int, receiveBufferSize: Int? = nil, timeout: TimeInterval = 60) throws {
        self.socket = try RawSocket(port: port, timeout: timeout, receiveBuffer: receiveBufferSize)
    }

    /// Connects on a thread of its own.
    public static func connect(port: Int, receiveBufferSize: Int? = nil) async throws -> HTTPTestConnection {
        try await onThread { try HTTPTestConnection(port: port, receiveBufferSize: receiveBufferSize) }
    }

    /// One request on a new kept-alive connection (no `Connection: close`: whether the
    /// connection stays open is the server's choice, which the response's fields show).
    public static func get(
        port: Int, _ target: String, method: String = "GET", headers: [(String, String)] = [], body: [UInt8] = []
    ) async throws -> HTTPTestResponse {
        let connection = try await self.connect(port: port)
        return try await connection.request(method, target, headers: headers, body: body)
    }

    /// Whether the server closed the connection (a read found its end, or a reset).
    public var isClosedByPeer: Bool { self.socket.peerClosed }

    public func send(_ bytes: [UInt8]) throws {
        try self.socket.send(bytes)
    }

    public func send(_ text: String) throws {
        try self.socket.send(text)
    }

    /// Reads up to `count` more bytes into the buffer; false at the end of the stream.
    @discardableResult
    public func fill(atMost count: Int = 64 * 1024) throws -> Bool {
        try self.socket.receiveOnce(limit: count) > 0
    }

    /// Reads and discards up to `count` bytes; returns how many arrived (0 at the end of the
    /// stream).
    public func drain(atMost count: Int) throws -> Int {
        let received = try self.socket.receiveOnce(limit: count)
        self.socket.consume(self.socket.received.count)
        return received
    }

    /// Everything until the server closes (at most `limit` bytes), buffered bytes first.
    public func readUntilClosed(limit: Int = 64 * 1024 * 1024) throws -> [UInt8] {
        while self.socket.received.count < limit, try self.socket.receiveOnce() > 0 {}
        defer { self.socket.consume(self.socket.received.count) }
        return self.socket.received
    }

    /// Reads the next response. `isHead`: the request was HEAD (no body follows). A response cut
    /// short by the server's close comes back with `isComplete` false.
    public func readResponse(isHead: Bool = false) throws -> HTTPTestResponse {
        var framer = RawHTTP.Framer(isHead: isHead)
        while true {
            if let end = framer.end(in: self.socket.received) {
                let response = try RawHTTP.parse(Array(self.socket.received[0..<end]), isHead: isHead)
                self.socket.consume(end)
                return response
            }
            if try self.socket.peerClosed || self.socket.receiveOnce() == 0 {
                guard !self.socket.received.isEmpty else {
                    throw RawSocket.Failure(description: "connection closed before a response")
                }
                defer { self.socket.consume(self.socket.received.count) }
                return try RawHTTP.parse(self.socket.received, isHead: isHead)
            }
        }
    }

    /// Sends a request (``RawHTTP/request(_:_:headers:body:close:)`` without
    /// `Connection: close`) and reads its response.
    public func request(
        _ method: String = "GET", _ target: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) throws -> HTTPTestResponse {
        try self.send(RawHTTP.request(method, target, headers: headers, body: body, close: false))
        return try self.readResponse(isHead: method == "HEAD")
    }

    /// ``request(_:_:headers:body:)`` on a thread of its own.
    public func request(
        _ method: String = "GET", _ target: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) async throws -> HTTPTestResponse {
        try await onThread { try self.request(method, target, headers: headers, body: body) }
    }

    /// Runs `body` with this connection on a thread of its own.
    public func run<T: Sendable>(_ body: @escaping @Sendable (HTTPTestConnection) throws -> T) async throws -> T {
        try await onThread { try body(self) }
    }

    /// Shuts the socket down now, both ways (a client that goes away mid-response).
    public func closeNow() {
        shutdown(self.socket.fd, Int32(SHUT_RDWR))
    }
}
