import Foundation
import SpoutTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A response as read from the socket.
struct HTTPTestResponse: Sendable {
    var status: Int
    /// Header fields in order, names lowercased.
    var headers: [(name: String, value: String)]
    /// The body, de-chunked when it was sent chunked.
    var body: [UInt8]
    /// The trailer fields of a chunked body, names lowercased.
    var trailers: [(name: String, value: String)] = []

    var text: String { String(decoding: self.body, as: UTF8.self) }

    func header(_ name: String) -> String? {
        self.headers.first { $0.name == name.lowercased() }?.value
    }

    func trailer(_ name: String) -> String? {
        self.trailers.first { $0.name == name.lowercased() }?.value
    }

    /// The body parsed as JSON (Foundation), for structural checks.
    func json() throws -> Any {
        try JSONSerialization.jsonObject(with: Data(self.body), options: [.fragmentsAllowed])
    }
}

/// A minimal HTTP/1.1 client over a blocking TCP socket: one request per connection
/// (`Connection: close`), run on a thread of its own so that no Swift concurrency thread blocks.
enum HTTPTestClient {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func send(
        port: Int, method: String, path: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) async throws -> HTTPTestResponse {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result { try self.sendBlocking(port: port, method: method, path: path, headers: headers, body: body) })
            }
            thread.start()
        }
    }

    static func get(port: Int, _ path: String, accept: String? = nil) async throws -> HTTPTestResponse {
        try await self.send(port: port, method: "GET", path: path, headers: accept.map { [("Accept", $0)] } ?? [])
    }

    /// POST with an `application/x-www-form-urlencoded` body.
    static func postForm(port: Int, _ path: String, _ fields: [(String, String)]) async throws -> HTTPTestResponse {
        let body = fields.map { "\(self.formEncode($0.0))=\(self.formEncode($0.1))" }.joined(separator: "&")
        return try await self.send(
            port: port, method: "POST", path: path, headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: Array(body.utf8))
    }

    /// POST with an `application/json` body.
    static func postJSON(port: Int, _ path: String, _ json: String) async throws -> HTTPTestResponse {
        try await self.send(
            port: port, method: "POST", path: path, headers: [("Content-Type", "application/json")], body: Array(json.utf8))
    }

    static func formEncode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    private static func sendBlocking(
        port: Int, method: String, path: String, headers: [(String, String)], body: [UInt8]
    ) throws -> HTTPTestResponse {
        let fd = try LoopbackSocket.connect(port: port, timeout: 60)
        defer { close(fd) }

        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        let request = Array(head.utf8) + body
        var sent = 0
        while sent < request.count {
            let count = request[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw Failure(description: "send() failed: \(errno)") }
            sent += count
        }

        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw Failure(description: "recv() failed: \(errno)") }
            if count == 0 { break }
            received.append(contentsOf: buffer[0..<count])
        }
        return try self.parse(received)
    }

    static func parse(_ bytes: [UInt8]) throws -> HTTPTestResponse {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let headEnd = self.find(separator, in: bytes, from: 0) else {
            throw Failure(description: "no complete response head in \(bytes.count) bytes")
        }
        let lines = String(decoding: bytes[0..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw Failure(description: "bad status line \(lines[0])")
        }
        let headers = self.fields(lines.dropFirst())
        var body = Array(bytes[(headEnd + 4)...])
        var trailers: [(name: String, value: String)] = []
        if headers.contains(where: { $0.name == "transfer-encoding" && $0.value.lowercased().contains("chunked") }) {
            (body, trailers) = try self.dechunk(body)
        }
        return HTTPTestResponse(status: status, headers: headers, body: body, trailers: trailers)
    }

    private static func fields(_ lines: some Sequence<String>) -> [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields.append((line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        return fields
    }

    /// The body of a chunked message and its trailer fields.
    private static func dechunk(_ bytes: [UInt8]) throws -> (body: [UInt8], trailers: [(name: String, value: String)]) {
        var output: [UInt8] = []
        var index = 0
        while true {
            guard let lineEnd = self.find([13, 10], in: bytes, from: index) else {
                throw Failure(description: "truncated chunked body (no terminating chunk)")
            }
            let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self).split(separator: ";")[0]
            guard let size = Int(sizeText, radix: 16) else { throw Failure(description: "bad chunk size \(sizeText)") }
            index = lineEnd + 2
            if size == 0 {
                let rest = String(decoding: bytes[index...], as: UTF8.self)
                return (output, self.fields(rest.components(separatedBy: "\r\n")))
            }
            guard index + size <= bytes.count else { throw Failure(description: "truncated chunk") }
            output.append(contentsOf: bytes[index..<(index + size)])
            index += size + 2
        }
    }

    private static func find(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        var index = start
        while index + needle.count <= bytes.count {
            if bytes[index] == needle[0] && Array(bytes[index..<(index + needle.count)]) == needle { return index }
            index += 1
        }
        return nil
    }
}
