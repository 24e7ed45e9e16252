#if canImport(Glibc)
import Glibc
#endif
import NIOPosix
import SpoutTestSupport

/// A minimal blocking HTTP/1.1 client over a raw socket, for end-to-end tests: it sends bytes
/// as given and parses responses strictly (status line, headers, Content-Length or chunked
/// body), recording whether a chunked body ended with its terminating chunk.
///
/// Blocking calls run on `NIOThreadPool.singleton` through the async wrappers so that tests do
/// not tie up the cooperative pool the server's handlers run on.
final class TestHTTPClient: @unchecked Sendable {
    // @unchecked Sendable: a client is used by one test at a time, one call at a time (each
    // async wrapper awaits the blocking call before returning).

    struct Response: Sendable {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]
        /// The body was chunked.
        var isChunked: Bool
        /// The body ended as framed (all Content-Length bytes, or the terminating chunk).
        var isComplete: Bool

        func header(_ name: String) -> String? {
            self.headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }

        var text: String { String(decoding: self.body, as: UTF8.self) }
    }

    struct ClientError: Error, CustomStringConvertible {
        var description: String
    }

    private let fd: Int32
    private var buffer: [UInt8] = []
    private(set) var isClosedByPeer = false

    /// Connects to 127.0.0.1:`port`; `receiveBufferSize` shrinks the socket's receive buffer
    /// (before connecting, so the TCP window stays small) to make a slow reader felt.
    init(port: Int, receiveBufferSize: Int? = nil) throws {
        self.fd = try LoopbackSocket.connect(port: port, timeout: 60, receiveBuffer: receiveBufferSize)
    }

    deinit {
        Glibc.close(self.fd)
    }

    func send(_ text: String) throws {
        try self.send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(self.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw ClientError(description: "send() failed: \(errno)") }
            offset += sent
        }
    }

    /// Reads up to `count` more bytes into the buffer; false at end of stream.
    @discardableResult
    func fill(atMost count: Int = 65536) throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: count)
        let received = chunk.withUnsafeMutableBytes { recv(self.fd, $0.baseAddress, count, 0) }
        if received < 0 {
            if errno == ECONNRESET {
                self.isClosedByPeer = true
                return false
            }
            throw ClientError(description: "recv() failed: \(errno)")
        }
        if received == 0 {
            self.isClosedByPeer = true
            return false
        }
        self.buffer.append(contentsOf: chunk[0..<received])
        return true
    }

    /// Reads and discards up to `count` bytes; returns how many arrived (0 at end of stream).
    func drain(atMost count: Int) throws -> Int {
        guard try self.fill(atMost: count) else { return 0 }
        let received = self.buffer.count
        self.buffer.removeAll(keepingCapacity: true)
        return received
    }

    /// Whether the peer closed the connection (reads until end of stream or `limit` bytes).
    func readUntilClosed(limit: Int = 64 * 1024 * 1024) throws -> [UInt8] {
        while self.buffer.count < limit, try self.fill() {}
        defer { self.buffer.removeAll() }
        return self.buffer
    }

    private func readLine() throws -> String? {
        while true {
            if let index = self.findCRLF() {
                let line = String(decoding: self.buffer[0..<index], as: UTF8.self)
                self.buffer.removeFirst(index + 2)
                return line
            }
            guard try self.fill() else { return nil }
        }
    }

    private func findCRLF() -> Int? {
        guard self.buffer.count >= 2 else { return nil }
        for index in 0..<(self.buffer.count - 1) where self.buffer[index] == 13 && self.buffer[index + 1] == 10 {
            return index
        }
        return nil
    }

    private func readExactly(_ count: Int) throws -> [UInt8]? {
        while self.buffer.count < count {
            guard try self.fill(atMost: max(65536, count - self.buffer.count)) else { return nil }
        }
        let bytes = Array(self.buffer[0..<count])
        self.buffer.removeFirst(count)
        return bytes
    }

    /// Reads one response. `isHead`: the request was HEAD (no body follows).
    func readResponse(isHead: Bool = false) throws -> Response {
        guard let statusLine = try self.readLine() else { throw ClientError(description: "connection closed before a response") }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else { throw ClientError(description: "bad status line: \(statusLine)") }
        var headers: [(String, String)] = []
        while let line = try self.readLine(), !line.isEmpty {
            let pair = line.split(separator: ":", maxSplits: 1)
            headers.append((String(pair[0]), pair.count > 1 ? String(pair[1].drop { $0 == " " }) : ""))
        }
        var response = Response(status: status, headers: headers, body: [], isChunked: false, isComplete: true)
        if isHead || status == 204 || status == 304 { return response }
        if response.header("transfer-encoding")?.lowercased() == "chunked" {
            response.isChunked = true
            response.isComplete = false
            while let sizeLine = try self.readLine() {
                guard let size = Int(sizeLine.split(separator: ";")[0], radix: 16) else {
                    throw ClientError(description: "bad chunk size: \(sizeLine)")
                }
                if size == 0 {
                    _ = try self.readLine()
                    response.isComplete = true
                    break
                }
                guard let chunk = try self.readExactly(size) else { break }
                response.body.append(contentsOf: chunk)
                guard try self.readLine() != nil else { break }
            }
        } else if let length = response.header("content-length").flatMap(Int.init) {
            if let body = try self.readExactly(length) {
                response.body = body
            } else {
                response.isComplete = false
            }
        } else {
            response.body = try self.readUntilClosed()
        }
        return response
    }

    /// Sends a request and reads its response.
    func request(_ method: String = "GET", _ target: String, headers: [(String, String)] = [], body: [UInt8] = []) throws -> Response {
        try self.send(Self.format(method, target, headers: headers, body: body))
        return try self.readResponse(isHead: method == "HEAD")
    }

    static func format(_ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = []) -> [UInt8] {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: localhost\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { text += "Content-Length: \(body.count)\r\n" }
        text += "\r\n"
        return Array(text.utf8) + body
    }

    // MARK: Async wrappers (blocking work off the cooperative pool)

    static func connect(port: Int, receiveBufferSize: Int? = nil) async throws -> TestHTTPClient {
        try await NIOThreadPool.singleton.runIfActive { try TestHTTPClient(port: port, receiveBufferSize: receiveBufferSize) }
    }

    func request(
        _ method: String = "GET", _ target: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) async throws -> Response {
        try await NIOThreadPool.singleton.runIfActive { try self.request(method, target, headers: headers, body: body) }
    }

    func run<T: Sendable>(_ body: @escaping @Sendable (TestHTTPClient) throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive { try body(self) }
    }

    /// One request on a fresh connection.
    static func get(
        port: Int, _ target: String, method: String = "GET", headers: [(String, String)] = [], body: [UInt8] = []
    ) async throws -> Response {
        let client = try await self.connect(port: port)
        return try await client.request(method, target, headers: headers, body: body)
    }
}

extension TestHTTPClient {
    /// Closes the socket now (a client that goes away mid-response).
    func closeNow() {
        shutdown(self.fd, Int32(SHUT_RDWR))
    }
}
