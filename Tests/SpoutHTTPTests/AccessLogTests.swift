import Logging
import Synchronization
import Testing

@testable import SpoutHTTP

/// The access log writes the same line whether an entry goes straight to Spout's handler or
/// through `Logger` as metadata.
@Suite struct AccessLogTests {
    static let entries: [AccessLogEntry] = [
        AccessLogEntry(
            requestID: "fe9bf5eb8bce64d6", traceID: "4bf92f3577b34da6a3ce929d0e0e4736", spanID: "00f067aa0ba902b7",
            method: "GET", path: "/employees/10004", status: 200, bytes: 1_817, milliseconds: 0.413, rows: 1),
        AccessLogEntry(
            requestID: "a", traceID: "b", spanID: "c", method: "POST", path: "/pets?name=\"Fluffy\"\n", status: 500,
            bytes: 0, milliseconds: 12, rows: nil, failure: "the database is unavailable\t(\u{1})"),
        AccessLogEntry(
            requestID: "a", traceID: "b", spanID: "c", method: "GET", path: "/health", status: 200, bytes: 15,
            milliseconds: 1e-3, rows: nil),
    ]

    @Test(arguments: LineLogHandler.Format.allCases, 0..<AccessLogTests.entries.count)
    func directLineIsTheLoggersLine(format: LineLogHandler.Format, index: Int) {
        let entry = Self.entries[index]
        let handler = LineLogHandler(label: "spout", format: format) { _ in }
        let event = LogEvent(
            level: entry.level, message: entry.message, metadata: entry.metadata, source: "SpoutHTTP", file: #fileID,
            function: #function, line: #line)
        let direct = String(decoding: handler.line(for: entry, timestamp: "2026-11-27T23:10:00+0000"), as: UTF8.self)
        let logged = String(decoding: handler.line(for: event, timestamp: "2026-11-27T23:10:00+0000"), as: UTF8.self)
        #expect(direct == logged)
        // One line, whatever the values hold.
        let bytes = Array(direct.utf8)
        #expect(bytes.last == UInt8(ascii: "\n") && !bytes.dropLast().contains { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") })
    }

    @Test func textLineNamesEveryField() {
        let handler = LineLogHandler(label: "spout") { _ in }
        let line = String(decoding: handler.line(for: Self.entries[0], timestamp: "T"), as: UTF8.self)
        #expect(
            line == "T info spout: duration.ms=0.413 http.bytes=1817 http.method=GET http.path=/employees/10004 http.status=200 query.rows=1 request.id=fe9bf5eb8bce64d6 span.id=00f067aa0ba902b7 trace.id=4bf92f3577b34da6a3ce929d0e0e4736 [SpoutHTTP] request\n"
        )
        // A line break inside a value is written as `\n`.
        let failed = String(decoding: handler.line(for: Self.entries[1], timestamp: "T"), as: UTF8.self)
        #expect(failed.contains(#" http.path=/pets?name="Fluffy"\n http.status=500 "#))
    }

    /// JSON escapes quotes, line breaks, tabs and other control characters (`\u00XX`, lowercase).
    @Test func jsonLineEscapesControlCharacters() {
        let handler = LineLogHandler(label: "spout", format: .json) { _ in }
        let line = String(decoding: handler.line(for: Self.entries[1], timestamp: "T"), as: UTF8.self)
        #expect(line.contains(#""error":"the database is unavailable\t(\u0001)""#))
        #expect(line.contains(#""http.path":"/pets?name=\"Fluffy\"\n""#))
        let unitSeparator = AccessLogEntry(
            requestID: "a", traceID: "b", spanID: "c", method: "GET", path: "/\u{1f}", status: 200, bytes: 0, milliseconds: 1,
            rows: nil)
        #expect(String(decoding: handler.line(for: unitSeparator, timestamp: "T"), as: UTF8.self).contains(#""http.path":"/\u001f""#))
    }

    /// Written through a logger: the handler's level applies, and a handler with metadata of its
    /// own still gets it on the line (through `Logger`).
    @Test(arguments: [false, true])
    func recordKeepsLevelsAndHandlerMetadata(withMetadata: Bool) {
        let lines = Mutex<[String]>([])
        var logger = Logger(label: "spout") { label in
            LineLogHandler(label: label) { bytes in lines.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) } }
        }
        logger.logLevel = .notice
        if withMetadata { logger[metadataKey: "instance"] = "a" }
        let log = AccessLog(logger: logger)
        log.record(Self.entries[0])
        log.record(Self.entries[1])
        let written = lines.withLock { $0 }
        #expect(written.count == 1)
        #expect(written.first?.contains(" error spout: duration.ms=12.0 error=the database is unavailable") == true)
        #expect(written.first?.contains(" instance=a ") == withMetadata)
        #expect(written.first?.hasSuffix(" [SpoutHTTP] request failed\n") == true)
    }
}
