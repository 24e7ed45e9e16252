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
    private var rowCount = 0
    private var rowsStarted = false
    /// The row sink saw a line end whose separator is not written yet (JSON: a comma before
    /// the next row; JSON Lines: nothing, the closing brace and newline went out at once).
    private var atLineStart = true

    public init(format: Format, sink: any ByteSink) {
        self.format = format
        self.out = ChunkedOutput(sink: sink)
    }

    /// The rows written into ``rows`` so far.
    public var rows: Int { self.rowCount }

    public func begin(cursor: String) throws {
        self.out.append("{\"cursor\":")
        JSONText.writeString(cursor, to: &self.out)
        self.out.append(self.format == .json ? "," : "}\n")
        if self.format == .json { self.out.append("\"deleted\":[") }
    }

    /// Writes one key to forget: `labels` and `values` pairwise, values as `dateFormat` says.
    /// Throws once a row has been written: the keys to forget come first.
    public func deleted(labels: [String], values: [SQLValue], dateFormat: DateFormat) throws {
        guard !self.rowsStarted else {
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
        self.startRows()
        if self.format == .json { self.out.append("]}") }
        try self.out.finish()
    }

    private func startRows() {
        guard !self.rowsStarted else { return }
        self.rowsStarted = true
        if self.format == .json { self.out.append("],\"rows\":[") }
    }

    /// Takes a row encoder's JSON Lines bytes and writes them framed as the format says.
    fileprivate func rowBytes(_ bytes: UnsafeRawBufferPointer) throws {
        self.startRows()
        var start = 0
        let count = bytes.count
        while start < count {
            if self.atLineStart {
                self.atLineStart = false
                switch self.format {
                case .json: if self.rowCount > 0 { self.out.append(UInt8(ascii: ",")) }
                case .jsonLines: self.out.append("{\"row\":")
                }
                self.rowCount += 1
            }
            var end = start
            while end < count && bytes[end] != UInt8(ascii: "\n") { end += 1 }
            if end > start { self.out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<end])) }
            if end < count {
                // A line ends: its row is whole.
                if self.format == .jsonLines { self.out.append("}\n") }
                self.atLineStart = true
                end += 1
            }
            start = end
            try self.out.flushIfFull()
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
