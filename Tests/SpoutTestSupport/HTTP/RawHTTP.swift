import Foundation

/// HTTP/1.1 as bytes, for tests that must see the wire: the one place the suite writes a
/// request and frames and parses a response. Requests go over ``RawSocket``; a kept-alive
/// connection that sends several is an ``HTTPTestConnection``.
///
/// The async helpers run their blocking socket calls on a thread of their own
/// (``onThread(_:)``): no cooperative thread ever waits for the server.
public enum RawHTTP {
    /// A request: the request line, `Host`, `Connection: close` unless `close` is false, then
    /// `headers` as given and a `Content-Length` when there is a body (or the method is POST or
    /// PUT), then the body.
    public static func request(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = [], close: Bool = true
    ) -> [UInt8] {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if close { head += "Connection: close\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { head += "Content-Length: \(body.count)\r\n" }
        return Array((head + "\r\n").utf8) + body
    }

    /// Sends `bytes` on a new connection and reads the response (blocking; call from
    /// ``onThread(_:)``): until it is complete by its framing, or until the server closes.
    /// Returns nil when the server closed the connection without answering.
    /// - Parameters:
    ///   - halfClose: shut the sending side after the request (for broken requests, so the
    ///     server never waits for more).
    ///   - sourceAddress: the loopback address to connect from (another client's).
    public static func exchange(
        port: Int, _ bytes: [UInt8], timeout: TimeInterval = 30, halfClose: Bool = false, sourceAddress: String? = nil
    ) throws -> HTTPTestResponse? {
        let socket = try RawSocket(port: port, timeout: timeout, sourceAddress: sourceAddress)
        defer { socket.close() }
        // The server may answer (413, 431) and close before taking the whole request.
        do { try socket.send(bytes) } catch {}
        if halfClose { socket.shutdownWrite() }
        var framer = Framer()
        while framer.end(in: socket.received) == nil {
            if try socket.receiveOnce() == 0 { break }
        }
        if socket.received.isEmpty { return nil }
        return try self.parse(socket.received)
    }

    /// Sends `bytes` on a new connection (on a thread of its own) and reads the response; a
    /// connection closed without an answer is an error.
    public static func send(port: Int, _ bytes: [UInt8], timeout: TimeInterval = 30) async throws -> HTTPTestResponse {
        try await onThread {
            guard let response = try self.exchange(port: port, bytes, timeout: timeout) else {
                throw RawSocket.Failure(description: "the server closed the connection without a response")
            }
            return response
        }
    }

    /// One request on a new connection that says `Connection: close` (the client is done after
    /// it). A test that watches whether the server itself keeps or closes a connection uses
    /// ``HTTPTestConnection`` instead.
    public static func get(
        port: Int, _ target: String, method: String = "GET", headers: [(String, String)] = [], body: [UInt8] = [],
        timeout: TimeInterval = 30
    ) async throws -> HTTPTestResponse {
        try await self.send(port: port, self.request(method, target, headers: headers, body: body), timeout: timeout)
    }

    /// POST with an `application/json` body.
    public static func postJSON(
        port: Int, _ target: String, _ json: String, headers: [(String, String)] = []
    ) async throws -> HTTPTestResponse {
        try await self.get(
            port: port, target, method: "POST", headers: [("Content-Type", "application/json")] + headers, body: Array(json.utf8))
    }

    /// POST with an `application/x-www-form-urlencoded` body.
    public static func postForm(port: Int, _ target: String, _ fields: [(String, String)]) async throws -> HTTPTestResponse {
        let body = fields.map { "\(self.formEncode($0.0))=\(self.formEncode($0.1))" }.joined(separator: "&")
        return try await self.get(
            port: port, target, method: "POST", headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: Array(body.utf8))
    }

    /// `text` percent-encoded for a form or query (unreserved characters kept).
    public static func formEncode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    // MARK: Framing and parsing

    /// Where the first response in `bytes` ends (the index after it) when it has all arrived:
    /// its head and, by `Content-Length` or the terminating chunk and trailers, its whole body.
    /// Nil while it is incomplete, and always for a body framed by closing (only the close
    /// ends it). `isHead`: the request was HEAD (no body follows the head). A reader whose
    /// buffer grows asks a ``Framer`` instead, which resumes where it stopped.
    public static func responseEnd(in bytes: [UInt8], isHead: Bool = false) -> Int? {
        var framer = Framer(isHead: isHead)
        return framer.end(in: bytes)
    }

    /// Finds where the first response of a growing buffer ends, resuming where its last call
    /// stopped: the head is parsed once and each chunk of a chunked body is stepped over once,
    /// so a body of n chunks read in m receives costs O(n + m) steps, not O(n × m).
    ///
    /// Contract: every call sees the same buffer as the last one, with bytes only appended.
    public struct Framer: Sendable {
        private enum Body: Sendable {
            /// The response ends at this index (no body, or its length is known).
            case endsAt(Int)
            /// Chunked: the next chunk's size line starts at this index.
            case chunked(next: Int)
            /// Framed by closing: only the close ends it.
            case untilClose
        }

        private let isHead: Bool
        private var body: Body?

        public init(isHead: Bool = false) {
            self.isHead = isHead
        }

        /// The index after the response when it has all arrived in `bytes`, else nil.
        public mutating func end(in bytes: [UInt8]) -> Int? {
            if self.body == nil {
                guard let headEnd = RawHTTP.find([13, 10, 13, 10], in: bytes, from: 0),
                    let head = try? RawHTTP.parseHead(bytes[0..<headEnd])
                else { return nil }
                let bodyStart = headEnd + 4
                if self.isHead || head.status == 204 || head.status == 304 || (100..<200).contains(head.status) {
                    self.body = .endsAt(bodyStart)
                } else if RawHTTP.isChunked(head.headers) {
                    self.body = .chunked(next: bodyStart)
                } else if let length = RawHTTP.contentLength(head.headers) {
                    self.body = .endsAt(bodyStart + length)
                } else {
                    self.body = .untilClose
                }
            }
            switch self.body {
            case .endsAt(let end)?:
                return bytes.count >= end ? end : nil
            case .chunked(var next)?:
                defer { self.body = .chunked(next: next) }
                while let lineEnd = RawHTTP.find([13, 10], in: bytes, from: next) {
                    let sizeText = String(decoding: bytes[next..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
                    guard let size = Int(sizeText, radix: 16) else { return nil }
                    if size == 0 {
                        // Trailer lines, then an empty line (scanned again until all arrived:
                        // they are a few bytes).
                        var index = lineEnd + 2
                        while let end = RawHTTP.find([13, 10], in: bytes, from: index) {
                            if end == index { return end + 2 }
                            index = end + 2
                        }
                        return nil
                    }
                    // Step over a chunk only once its data and CRLF are all here.
                    guard lineEnd + 2 + size + 2 <= bytes.count else { return nil }
                    next = lineEnd + 2 + size + 2
                }
                return nil
            case .untilClose?, nil:
                return nil
            }
        }
    }

    /// Whether `bytes` hold a whole response (``responseEnd(in:isHead:)``).
    public static func isComplete(_ bytes: [UInt8]) -> Bool {
        self.responseEnd(in: bytes) != nil
    }

    /// Parses the response in `bytes`; a body cut short is kept with `isComplete` false. A body
    /// framed by closing is all of `bytes` after the head (the caller read until the close).
    public static func parse(_ bytes: [UInt8], isHead: Bool = false) throws -> HTTPTestResponse {
        guard let headEnd = self.find([13, 10, 13, 10], in: bytes, from: 0) else {
            throw RawSocket.Failure(description: "no complete response head in \(bytes.count) bytes")
        }
        let head = try self.parseHead(bytes[0..<headEnd])
        var response = HTTPTestResponse(status: head.status, headers: head.headers)
        let rest = Array(bytes[(headEnd + 4)...])
        if isHead || head.status == 204 || head.status == 304 || (100..<200).contains(head.status) { return response }
        if self.isChunked(head.headers) {
            response.isChunked = true
            (response.body, response.trailers, response.isComplete) = self.dechunk(rest)
        } else if let length = self.contentLength(head.headers) {
            response.body = Array(rest.prefix(length))
            response.isComplete = rest.count >= length
        } else {
            response.body = rest
        }
        return response
    }

    fileprivate static func parseHead(_ bytes: ArraySlice<UInt8>) throws -> (status: Int, headers: [(name: String, value: String)]) {
        let lines = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            throw RawSocket.Failure(description: "bad status line '\(lines[0])'")
        }
        return (status, self.fields(lines.dropFirst()))
    }

    private static func fields(_ lines: some Sequence<String>) -> [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields.append((line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        return fields
    }

    fileprivate static func isChunked(_ headers: [(name: String, value: String)]) -> Bool {
        headers.contains { $0.name == "transfer-encoding" && $0.value.lowercased().contains("chunked") }
    }

    fileprivate static func contentLength(_ headers: [(name: String, value: String)]) -> Int? {
        headers.first { $0.name == "content-length" }.flatMap { Int($0.value) }
    }

    /// The data of a chunked body, its trailer fields, and whether its terminating chunk arrived.
    private static func dechunk(_ bytes: [UInt8]) -> (body: [UInt8], trailers: [(name: String, value: String)], complete: Bool) {
        var output: [UInt8] = []
        var index = 0
        while let lineEnd = self.find([13, 10], in: bytes, from: index) {
            let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText, radix: 16) else { return (output, [], false) }
            index = lineEnd + 2
            if size == 0 {
                let rest = String(decoding: bytes[index...], as: UTF8.self)
                return (output, self.fields(rest.components(separatedBy: "\r\n")), true)
            }
            guard index + size <= bytes.count else {
                output.append(contentsOf: bytes[index...])
                return (output, [], false)
            }
            output.append(contentsOf: bytes[index..<(index + size)])
            index += size + 2
        }
        return (output, [], false)
    }

    /// The first index of `needle` in `bytes` at or after `start`.
    public static func find(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
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
