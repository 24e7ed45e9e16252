import Foundation
import Testing

@testable import SpoutClient

/// A `text/event-stream` body is cut into the events the HTML standard says, whatever its line
/// ends and chunk boundaries.
@Suite struct ServerSentEventParserTests {
    /// The events of `body` fed `size` bytes at a time, and the parser after them.
    static func parse(_ body: String, chunkSize size: Int) throws -> ([ServerSentEvent], ServerSentEventParser) {
        var parser = ServerSentEventParser()
        var events: [ServerSentEvent] = []
        let bytes = Array(body.utf8)
        var offset = 0
        while offset < bytes.count {
            events += try parser.feed(bytes[offset..<min(offset + size, bytes.count)])
            offset += size
        }
        return (events, parser)
    }

    /// Spout's own stream: a `retry`, an event with an id, a heartbeat, another event.
    static let spoutStream = """
        retry: 1000

        id: c1
        event: change
        data: {"cursor":"a"}

        : heartbeat

        id: c2
        event: change
        data: {"cursor":"b"}


        """

    @Test("events, ids and retry, with LF, CRLF or CR line ends, in chunks of any size", arguments: ["\n", "\r\n", "\r"], [1, 2, 3, 7, 1_000])
    func lineEndsAndChunks(_ lineEnd: String, _ chunkSize: Int) throws {
        let body = Self.spoutStream.replacingOccurrences(of: "\n", with: lineEnd)
        let (events, parser) = try Self.parse(body, chunkSize: chunkSize)
        #expect(events == [
            ServerSentEvent(type: "change", data: #"{"cursor":"a"}"#, lastEventID: "c1"),
            ServerSentEvent(type: "change", data: #"{"cursor":"b"}"#, lastEventID: "c2"),
        ])
        #expect(parser.lastEventID == "c2")
        #expect(parser.reconnectionTime == .milliseconds(1_000))
    }

    @Test("data lines join with line feeds; one space after the colon goes, others stay; no colon is an empty value")
    func fields() throws {
        let (events, _) = try Self.parse("data:a\ndata:  b\ndata\n\nevent\ndata: x\n\n", chunkSize: 4)
        #expect(events == [
            ServerSentEvent(type: "message", data: "a\n b\n", lastEventID: ""),
            ServerSentEvent(type: "message", data: "x", lastEventID: ""),
        ])
    }

    @Test("an event without data is not dispatched, and its type does not leak into the next; the id stays")
    func noData() throws {
        let (events, parser) = try Self.parse("event: change\nid: 7\n\ndata: d\n\n", chunkSize: 3)
        #expect(events == [ServerSentEvent(type: "message", data: "d", lastEventID: "7")])
        #expect(parser.lastEventID == "7")
    }

    @Test("comments, unknown fields, an id with NUL and a retry that is not digits are ignored; an empty id clears it")
    func ignored() throws {
        let (events, parser) = try Self.parse(
            ": hello\nfoo: bar\nid: 1\nid: a\u{0}b\nretry: 5s\nretry: 20\ndata: x\n\nid\ndata: y\n\n", chunkSize: 5)
        #expect(events == [
            ServerSentEvent(type: "message", data: "x", lastEventID: "1"),
            ServerSentEvent(type: "message", data: "y", lastEventID: ""),
        ])
        #expect(parser.reconnectionTime == .milliseconds(20))
    }

    @Test("a byte-order mark opens the stream; an event the body ends inside of is not dispatched")
    func byteOrderMarkAndUnfinished() throws {
        let (events, _) = try Self.parse("\u{FEFF}data: first\n\ndata: unfinished\n", chunkSize: 2)
        #expect(events == [ServerSentEvent(type: "message", data: "first", lastEventID: "")])
    }

    @Test("a line longer than the limit is a malformed body")
    func longLine() throws {
        var parser = ServerSentEventParser()
        let line = [UInt8](repeating: UInt8(ascii: "a"), count: ServerSentEventParser.maximumLineBytes)
        #expect(try parser.feed(line).isEmpty)
        #expect(throws: SpoutClientError.self) { try parser.feed([UInt8(ascii: "a")]) }
    }
}
