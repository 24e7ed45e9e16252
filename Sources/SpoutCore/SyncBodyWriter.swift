#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes the body of a sync read: the new cursor first, then the keys of the rows to forget,
/// then the rows, each row's bytes exactly as the endpoint's ordinary read writes them.
///
/// JSON: `{"cursor":"…","deleted":[{"name":"Rex"}],"rows":[{…},{…}]}`.
/// JSON Lines: `{"cursor":"…"}`, then one `{"deleted":{"name":"Rex"}}` per key, then one
/// `{"row":{…}}` per row, each on a line of its own.
///
/// Contract: call ``begin(cursor:)``, ``deleted(_:)`` any number of times, then write the rows
/// into ``rows`` (a sink that takes a row encoder's JSON Lines output, any number of times,
/// its `finish` included), then ``end()``, which finishes the underlying sink exactly once.
/// Memory holds one chunk (``ChunkedOutput``). The cursor is base64url text (no escaping).
public final class SyncBodyWriter {
    public enum Format: Sendable, Hashable {
        case json
        case jsonLines
    }

    private let format: Format
    private var out: ChunkedOutput
    private var deletedCount = 0
    private var framing = RowFraming()

    /// Where the rows written into ``rowSink`` stand.
    private struct RowFraming {
        var started = false
        var count = 0
        /// A line end was seen whose row's separator is not written yet (JSON: a comma before
        /// the next row; JSON Lines: nothing, the closing brace and newline went out at once).
        var atLineStart = true
    }

    public init(format: Format, sink: any ByteSink) {
        self.format = format
        self.out = ChunkedOutput(sink: sink)
    }

    /// The rows written into ``rowSink`` so far.
    public var rows: Int { self.framing.count }

    public func begin(cursor: String) throws {
        self.out.append("{\"cursor\":")
        JSONText.writeString(cursor, to: &self.out)
        self.out.append(self.format == .json ? "," : "}\n")
        if self.format == .json { self.out.append("\"deleted\":[") }
    }

    /// Writes one key to forget: `labels` and `values` pairwise, values as `dateFormat` says.
    /// Throws once a row has been written: the keys to forget come first.
    public func deleted(labels: [String], values: [SQLValue], dateFormat: DateFormat) throws {
        guard !self.framing.started else {
            throw DatabaseError(.other, message: "a sync delta gave a key to forget after its rows")
        }
        switch self.format {
        case .json:
            if self.deletedCount > 0 { self.out.append(UInt8(ascii: ",")) }
        case .jsonLines:
            self.out.append("{\"deleted\":")
        }
        self.out.append(UInt8(ascii: "{"))
        for (index, (label, value)) in zip(labels, values).enumerated() {
            if index > 0 { self.out.append(UInt8(ascii: ",")) }
            JSONText.writeString(label, to: &self.out)
            self.out.append(UInt8(ascii: ":"))
            JSONText.writeValue(value, dateFormat: dateFormat, to: &self.out)
        }
        self.out.append(UInt8(ascii: "}"))
        if self.format == .jsonLines { self.out.append("}\n") }
        self.deletedCount += 1
        try self.out.flushIfFull()
    }

    /// Where a row encoder writes the rows, in JSON Lines (one compact object a line).
    public var rowSink: any ByteSink { RowLines(writer: self) }

    /// Ends the body and finishes the sink.
    public func end() throws {
        Self.startRows(self.format, &self.framing, &self.out)
        if self.format == .json { self.out.append("]}") }
        try self.out.finish()
    }

    private static func startRows(_ format: Format, _ framing: inout RowFraming, _ out: inout ChunkedOutput) {
        guard !framing.started else { return }
        framing.started = true
        if format == .json { out.append("],\"rows\":[") }
    }

    /// Takes a row encoder's JSON Lines bytes and writes them framed as the format says.
    fileprivate func rowBytes(_ bytes: UnsafeRawBufferPointer) throws {
        try Self.frame(bytes, self.format, &self.framing, &self.out)
    }

    /// What ``rowBytes(_:)`` does, on the writer's state taken once for the whole chunk rather
    /// than once per piece written; line ends are found by `memchr`.
    private static func frame(
        _ bytes: UnsafeRawBufferPointer, _ format: Format, _ framing: inout RowFraming, _ out: inout ChunkedOutput
    ) throws {
        self.startRows(format, &framing, &out)
        guard let base = bytes.baseAddress else { return }
        var start = 0
        while start < bytes.count {
            if framing.atLineStart {
                framing.atLineStart = false
                switch format {
                case .json: if framing.count > 0 { out.append(UInt8(ascii: ",")) }
                case .jsonLines: out.append("{\"row\":")
                }
                framing.count += 1
            }
            guard let newline = memchr(base + start, Int32(UInt8(ascii: "\n")), bytes.count - start) else {
                out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start...]))
                try out.flushIfFull()
                return
            }
            // A line ends: its row is whole.
            let end = base.distance(to: UnsafeRawPointer(newline))
            if end > start { out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<end])) }
            if format == .jsonLines { out.append("}\n") }
            framing.atLineStart = true
            start = end + 1
            try out.flushIfFull()
        }
    }

    /// The sink ``rowSink`` returns: every call, `finish` too, is more row bytes.
    private final class RowLines: ByteSink {
        let writer: SyncBodyWriter

        init(writer: SyncBodyWriter) {
            self.writer = writer
        }

        func write(_ chunk: UnsafeRawBufferPointer) throws {
            try self.writer.rowBytes(chunk)
        }

        func finish(_ last: UnsafeRawBufferPointer) throws {
            try self.writer.rowBytes(last)
        }
    }
}
