/// One event of a `text/event-stream` body (Server-Sent Events).
struct ServerSentEvent: Sendable, Equatable {
    /// The `event:` field; `message` when the event named none.
    var type: String
    /// The `data:` lines, joined by line feeds.
    var data: String
    /// The stream's last event id as of this event (its own `id:`, else an earlier one's).
    var lastEventID: String
}

/// Cuts a `text/event-stream` body into events as its bytes arrive, as the HTML standard's
/// event-stream interpretation does: lines end with CRLF, LF or CR (also when a CRLF is split
/// between chunks); a line starting with `:` is a comment (a heartbeat); `field: value` drops
/// one space after the colon; `data` lines accumulate; an empty line dispatches the event,
/// unless it has no `data` line at all; an `id` with a NUL is ignored; `retry` takes only
/// digits; unknown fields are ignored; a byte-order mark may open the stream.
///
/// Contract: ``feed(_:)`` the chunks in order; it returns the events they completed. An event
/// the body ended inside of is not dispatched. A line longer than ``maximumLineBytes`` throws
/// ``SpoutClientError/malformedBody(_:)``: the parser holds at most one line and one event.
struct ServerSentEventParser {
    /// The longest line accepted (1 MiB).
    static let maximumLineBytes = 1 << 20

    /// The last `id:` seen (kept across events, as `Last-Event-ID` is sent).
    private(set) var lastEventID = ""
    /// The last valid `retry:` field: how long the server asks a client to wait before it
    /// reconnects.
    private(set) var reconnectionTime: Duration?

    private var line: [UInt8] = []
    private var afterCarriageReturn = false
    private var atStreamStart = true
    private var type = ""
    private var data = ""
    private var hasData = false

    mutating func feed(_ bytes: some Sequence<UInt8>) throws -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            if self.afterCarriageReturn {
                self.afterCarriageReturn = false
                if byte == UInt8(ascii: "\n") { continue }
            }
            switch byte {
            case UInt8(ascii: "\r"), UInt8(ascii: "\n"):
                self.afterCarriageReturn = byte == UInt8(ascii: "\r")
                if let event = self.endLine() { events.append(event) }
            default:
                guard self.line.count < Self.maximumLineBytes else {
                    throw SpoutClientError.malformedBody("an event-stream line longer than \(Self.maximumLineBytes) bytes")
                }
                self.line.append(byte)
            }
        }
        return events
    }

    /// Interprets the line just ended; the event it dispatches, if it is an empty line.
    private mutating func endLine() -> ServerSentEvent? {
        var line = self.line[...]
        self.line.removeAll(keepingCapacity: true)
        if self.atStreamStart {
            self.atStreamStart = false
            if line.starts(with: [0xEF, 0xBB, 0xBF]) { line = line.dropFirst(3) }
        }
        guard !line.isEmpty else { return self.dispatch() }
        if line.first == UInt8(ascii: ":") { return nil }
        let name: ArraySlice<UInt8>
        var value: ArraySlice<UInt8> = []
        if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            name = line[..<colon]
            value = line[(colon + 1)...]
            if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        } else {
            name = line
        }
        switch String(decoding: name, as: UTF8.self) {
        case "event":
            self.type = String(decoding: value, as: UTF8.self)
        case "data":
            if self.hasData { self.data += "\n" }
            self.data += String(decoding: value, as: UTF8.self)
            self.hasData = true
        case "id":
            if !value.contains(0) { self.lastEventID = String(decoding: value, as: UTF8.self) }
        case "retry":
            if !value.isEmpty, value.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                let milliseconds = Int(String(decoding: value, as: UTF8.self))
            {
                self.reconnectionTime = .milliseconds(milliseconds)
            }
        default:
            break
        }
        return nil
    }

    /// The event gathered since the last empty line, if it had data; the gathering starts
    /// again either way.
    private mutating func dispatch() -> ServerSentEvent? {
        defer {
            self.type = ""
            self.data = ""
            self.hasData = false
        }
        guard self.hasData else { return nil }
        return ServerSentEvent(type: self.type.isEmpty ? "message" : self.type, data: self.data, lastEventID: self.lastEventID)
    }
}
