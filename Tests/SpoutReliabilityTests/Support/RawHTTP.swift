import Foundation
import SpoutTestSupport

/// An HTTP/1.1 response as read off the wire.
struct RawResponse: Sendable {
    var status: Int
    /// Header fields in order, names lowercased.
    var headers: [(name: String, value: String)]
    /// The body, de-chunked when it came chunked.
    var body: [UInt8]
    /// Whether a chunked body ended with its terminating chunk (always true for other bodies
    /// that arrived whole).
    var complete: Bool

    var text: String { String(decoding: self.body, as: UTF8.self) }

    func header(_ name: String) -> String? {
        let name = name.lowercased()
        return self.headers.first { $0.name == name }?.value
    }
}

/// Requests over ``RawSocket``: one request per connection (`Connection: close`), the
/// response read until the server closes.
enum RawHTTP {
    /// A request head for `method` and `target` with `Host` and `Connection: close`, plus
    /// `headers` and a `Content-Length` when there is a body.
    static func request(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) -> [UInt8] {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { head += "Content-Length: \(body.count)\r\n" }
        return Array((head + "\r\n").utf8) + body
    }

    /// Sends `bytes` and reads the whole response (blocking; call from ``onThread(_:)``).
    /// Returns nil when the server closed the connection without answering.
    /// With `halfClose`, the sending side is shut after the request (for broken requests, so the
    /// server never waits for more).
    /// `sourceAddress`: the loopback address to connect from (another client's).
    static func exchange(
        port: Int, _ bytes: [UInt8], timeout: TimeInterval = 30, halfClose: Bool = false, sourceAddress: String? = nil
    ) throws -> RawResponse? {
        let socket = try RawSocket(port: port, timeout: timeout, sourceAddress: sourceAddress)
        defer { socket.close() }
        // The server may answer (413, 431) and close before taking the whole request.
        do { try socket.send(bytes) } catch {}
        if halfClose { socket.shutdownWrite() }
        // Read until the response is complete (by its length or terminating chunk), as clients
        // do, or until the server closes.
        while !self.isComplete(socket.received) {
            if try socket.receiveOnce() == 0 { break }
        }
        if socket.received.isEmpty { return nil }
        return try self.parse(socket.received)
    }

    /// Whether `bytes` hold a whole response: its head and, by `Content-Length` or the
    /// terminating chunk, its whole body. A response framed by closing is never complete here.
    static func isComplete(_ bytes: [UInt8]) -> Bool {
        guard let headEnd = self.find([13, 10, 13, 10], in: bytes, from: 0),
            let head = try? self.parse(Array(bytes[0..<(headEnd + 4)]))
        else { return false }
        if head.status == 204 || head.status == 304 || (100..<200).contains(head.status) { return true }
        if head.header("transfer-encoding") != nil {
            // Cheap test first: a chunked body ends with the empty last chunk.
            guard bytes.count >= headEnd + 9, Array(bytes.suffix(5)) == Array("0\r\n\r\n".utf8) else { return false }
            return (try? self.parse(bytes))?.complete == true
        }
        if let length = head.header("content-length").flatMap({ Int($0) }) { return bytes.count - headEnd - 4 >= length }
        return false
    }

    static func get(port: Int, _ target: String, headers: [(String, String)] = [], timeout: TimeInterval = 30) async throws -> RawResponse {
        try await self.send(port: port, self.request("GET", target, headers: headers), timeout: timeout)
    }

    static func postJSON(port: Int, _ target: String, _ json: String, headers: [(String, String)] = []) async throws -> RawResponse {
        try await self.send(
            port: port, self.request("POST", target, headers: [("Content-Type", "application/json")] + headers, body: Array(json.utf8)))
    }

    /// Sends `bytes` on a thread of its own; a connection closed without an answer is an error.
    static func send(port: Int, _ bytes: [UInt8], timeout: TimeInterval = 30) async throws -> RawResponse {
        try await onThread {
            guard let response = try self.exchange(port: port, bytes, timeout: timeout) else {
                throw RawSocket.Failure(description: "the server closed the connection without a response")
            }
            return response
        }
    }

    /// Parses a response; a body cut short is kept with `complete` false.
    static func parse(_ bytes: [UInt8]) throws -> RawResponse {
        guard let headEnd = self.find([13, 10, 13, 10], in: bytes, from: 0) else {
            throw RawSocket.Failure(description: "no complete response head in \(bytes.count) bytes")
        }
        let lines = String(decoding: bytes[0..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            throw RawSocket.Failure(description: "bad status line '\(lines[0])'")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        let rest = Array(bytes[(headEnd + 4)...])
        let chunked = headers.contains { $0.name == "transfer-encoding" && $0.value.lowercased().contains("chunked") }
        if chunked {
            let (body, complete) = self.dechunk(rest)
            return RawResponse(status: status, headers: headers, body: body, complete: complete)
        }
        if let length = headers.first(where: { $0.name == "content-length" }).flatMap({ Int($0.value) }) {
            return RawResponse(status: status, headers: headers, body: Array(rest.prefix(length)), complete: rest.count >= length)
        }
        return RawResponse(status: status, headers: headers, body: rest, complete: true)
    }

    /// The data of a chunked body and whether its terminating chunk arrived.
    static func dechunk(_ bytes: [UInt8]) -> (body: [UInt8], complete: Bool) {
        var output: [UInt8] = []
        var index = 0
        while let lineEnd = self.find([13, 10], in: bytes, from: index) {
            let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText, radix: 16) else { return (output, false) }
            index = lineEnd + 2
            if size == 0 { return (output, true) }
            guard index + size <= bytes.count else {
                output.append(contentsOf: bytes[index...])
                return (output, false)
            }
            output.append(contentsOf: bytes[index..<(index + size)])
            index += size + 2
        }
        return (output, false)
    }

    static func find(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count >= needle.count, start <= bytes.count - needle.count else { return nil }
        var index = start
        let last = bytes.count - needle.count
        while index <= last {
            if bytes[index] == needle[0] {
                var matches = true
                for offset in 1..<needle.count where bytes[index + offset] != needle[offset] {
                    matches = false
                    break
                }
                if matches { return index }
            }
            index += 1
        }
        return nil
    }
}
