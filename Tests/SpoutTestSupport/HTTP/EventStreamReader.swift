import Foundation

/// A client of a `text/event-stream` response as a browser's `EventSource` reads one: the
/// request goes out with `Accept: text/event-stream`, the head is read, then the chunked body
/// is split into events (`id`, `event`, `data` fields; comments and `retry` are noted, not
/// returned). Blocking, with the socket's receive timeout (a hang fails the test).
///
/// `@unchecked Sendable`: a reader is used by one test, one call at a time (the async calls
/// await their blocking work before returning).
public final class EventStreamReader: @unchecked Sendable {
    /// One event of the stream.
    public struct Event: Sendable, Hashable {
        public var id: String?
        public var name: String
        public var data: String
    }

    public let status: Int
    public let headers: [(String, String)]
    /// Comment lines seen so far (`heartbeat`, without the colon and blank).
    public private(set) var comments: [String] = []
    /// Whether the body ended with its last chunk (the server closed the stream cleanly).
    public private(set) var endedCleanly = false
    private let socket: RawSocket
    /// Body bytes not yet split into events.
    private var text: [UInt8] = []
    private var chunked = false

    /// Connects, sends `GET target` with `headers` and reads the response head.
    public init(port: Int, _ target: String, headers: [(String, String)] = [], timeout: TimeInterval = 30) throws {
        self.socket = try RawSocket(port: port, timeout: timeout)
        var request = "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        try self.socket.send(request + "\r\n")
        let separator = Array("\r\n\r\n".utf8)
        var end: Int?
        while end == nil {
            end = Self.find(separator, in: self.socket.received)
            if end == nil, try self.socket.receiveOnce() == 0 { throw RawSocket.Failure(description: "closed before a response head") }
        }
        let head = String(decoding: self.socket.received[0..<end!], as: UTF8.self).components(separatedBy: "\r\n")
        self.socket.consume(end! + separator.count)
        self.status = Int(head[0].split(separator: " ")[1]) ?? 0
        self.headers = head.dropFirst().compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        self.chunked = self.header("Transfer-Encoding")?.lowercased() == "chunked"
    }

    /// Connects on a thread of its own.
    public static func open(port: Int, _ target: String, headers: [(String, String)] = []) async throws -> EventStreamReader {
        try await onThread { try EventStreamReader(port: port, target, headers: headers) }
    }

    public func header(_ name: String) -> String? {
        self.headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// The next event, skipping comments; nil when the stream ended.
    public func next() throws -> Event? {
        while true {
            if let event = self.takeEvent() { return event }
            guard try self.readBody() else { return nil }
        }
    }

    /// ``next()`` on a thread of its own.
    public func next() async throws -> Event? {
        try await onThread { try self.next() }
    }

    /// Reads until the stream ends; returns the events that came before.
    public func readToEnd() async throws -> [Event] {
        try await onThread {
            var events: [Event] = []
            while let event = try self.next() { events.append(event) }
            return events
        }
    }

    /// Shuts the connection down (the client leaves).
    public func close() {
        self.socket.close()
    }

    /// Splits one event off the body text, noting comments on the way; nil when none is whole.
    private func takeEvent() -> Event? {
        while let end = Self.find(Array("\n\n".utf8), in: self.text) {
            let block = String(decoding: self.text[0..<end], as: UTF8.self)
            self.text.removeFirst(end + 2)
            var event = Event(id: nil, name: "message", data: "")
            var isEvent = false
            for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix(":") {
                    self.comments.append(line.dropFirst().trimmingCharacters(in: .whitespaces))
                    continue
                }
                guard let colon = line.firstIndex(of: ":") else { continue }
                let field = line[..<colon]
                var value = line[line.index(after: colon)...]
                if value.hasPrefix(" ") { value = value.dropFirst() }
                switch field {
                case "id": event.id = String(value)
                case "event": event.name = String(value)
                case "data":
                    event.data += event.data.isEmpty ? String(value) : "\n" + value
                    isEvent = true
                default: break
                }
            }
            if isEvent { return event }
        }
        return nil
    }

    /// Moves more of the body into ``text``; false at its end.
    private func readBody() throws -> Bool {
        guard self.chunked else {
            if !self.socket.received.isEmpty {
                self.text += self.socket.received
                self.socket.consume(self.socket.received.count)
                return true
            }
            return try self.socket.receiveOnce() > 0 || !self.socket.received.isEmpty
        }
        while true {
            let crlf = Array("\r\n".utf8)
            if let lineEnd = Self.find(crlf, in: self.socket.received) {
                let sizeText = String(decoding: self.socket.received[0..<lineEnd], as: UTF8.self)
                guard let size = Int(sizeText.split(separator: ";")[0], radix: 16) else {
                    throw RawSocket.Failure(description: "bad chunk size \(sizeText)")
                }
                if size == 0 {
                    self.endedCleanly = true
                    return false
                }
                if self.socket.received.count >= lineEnd + 2 + size + 2 {
                    self.text += self.socket.received[(lineEnd + 2)..<(lineEnd + 2 + size)]
                    self.socket.consume(lineEnd + 2 + size + 2)
                    return true
                }
            }
            if try self.socket.receiveOnce() == 0 { return false }
        }
    }

    private static func find(_ needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        for start in 0...(bytes.count - needle.count) where bytes[start..<(start + needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }
}
