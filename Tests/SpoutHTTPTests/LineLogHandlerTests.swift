import Logging
import Synchronization
import Testing

@testable import SpoutHTTP

/// The access log's handler writes swift-log's `StreamLogHandler` line format.
@Suite struct LineLogHandlerTests {
    @Test func linesHaveStreamLogHandlersFormat() {
        var handler = LineLogHandler(label: "spout") { _ in }
        handler.metadata["base"] = "b"
        let event = LogEvent(
            level: .info, message: "request", metadata: ["http.status": .stringConvertible(200), "a": "x y", "base": "own"],
            source: "SpoutHTTP", file: #fileID, function: #function, line: #line)
        let line = String(decoding: handler.line(for: event, timestamp: "2026-11-23T12:24:37+0000"), as: UTF8.self)
        #expect(line == "2026-11-23T12:24:37+0000 info spout: a=x y base=own http.status=200 [SpoutHTTP] request\n")

        let bare = LineLogHandler(label: "") { _ in }
        let plain = LogEvent(level: .error, message: "boom", metadata: nil, source: "S", file: #fileID, function: #function, line: #line)
        #expect(String(decoding: bare.line(for: plain, timestamp: "T"), as: UTF8.self) == "T error: [S] boom\n")
    }

    @Test func everyEntryIsOneWholeLine() {
        let lines = Mutex<[String]>([])
        var logger = Logger(label: "spout") { label in
            LineLogHandler(label: label) { bytes in lines.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) } }
        }
        logger.logLevel = .notice
        logger.info("dropped")
        logger.notice("kept", metadata: ["k": "v"])
        let written = lines.withLock { $0 }
        #expect(written.count == 1)
        let line = written.first ?? ""
        #expect(line.hasSuffix(" notice spout: k=v [SpoutHTTPTests] kept\n"))
        // The timestamp: local time to the second with its UTC offset.
        let timestamp = line.prefix { $0 != " " }
        #expect(timestamp.count == 24)
        #expect(timestamp.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}/) != nil)
    }

    @Test func jsonLinesAreOneObjectEachWithTypedFields() {
        var handler = LineLogHandler(label: "spout", format: .json) { _ in }
        handler.metadata["base"] = "b"
        let event = LogEvent(
            level: .error, message: "request \"failed\"",
            metadata: [
                "http.status": .stringConvertible(500), "duration.ms": .stringConvertible(1.5), "error": "line\nbreak",
                "list": .array(["a", .stringConvertible(2)]), "base": "own",
            ],
            source: "SpoutHTTP", file: #fileID, function: #function, line: #line)
        let line = String(decoding: handler.line(for: event, timestamp: "2026-11-23T12:24:37+0000"), as: UTF8.self)
        #expect(line == #"{"time":"2026-11-23T12:24:37+0000","level":"error","label":"spout","source":"SpoutHTTP","message":"request \"failed\"","base":"own","duration.ms":1.5,"error":"line\nbreak","http.status":500,"list":["a",2]}"# + "\n")
    }
}
