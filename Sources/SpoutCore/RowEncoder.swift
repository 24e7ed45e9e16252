/// Values of the current row, read by index.
protocol RowValues {
    func value(at index: Int) -> SQLValue
    /// Writes value `index` as JSON: exactly the bytes
    /// `JSONText.writeValue(value(at: index), dateFormat:to:)` writes (the default).
    func writeJSON(at index: Int, dateFormat: DateFormat, to out: inout ChunkedOutput)
    /// Writes the row as the compact object `layout` describes, each value as
    /// ``writeJSON(at:dateFormat:to:)`` writes it (the default).
    func writeJSONObject(_ layout: CompactObjectLayout, dateFormat: DateFormat, to out: inout ChunkedOutput)
}

extension RowValues {
    func writeJSON(at index: Int, dateFormat: DateFormat, to out: inout ChunkedOutput) {
        JSONText.writeValue(self.value(at: index), dateFormat: dateFormat, to: &out)
    }

    func writeJSONObject(_ layout: CompactObjectLayout, dateFormat: DateFormat, to out: inout ChunkedOutput) {
        layout.write(to: &out) { column, out in self.writeJSON(at: column, dateFormat: dateFormat, to: &out) }
    }
}

/// A cursor that writes the values of its current row as JSON itself, straight from the
/// driver's buffers, instead of making an ``SQLValue`` for each one. ``RowStream`` uses it for
/// JSON and JSON Lines rows without attachments; CSV and attached rows still read
/// ``RowCursor/value(at:)``.
public protocol JSONWritingCursor: RowCursor {
    /// Writes value `index` of the current row as JSON into `out`: exactly the bytes
    /// `JSONText.writeValue(value(at: index), dateFormat: dateFormat, to: &out)` writes, so
    /// either path gives the same output. Called only while the cursor is on a row (after
    /// ``RowCursor/next()`` returned true), with `index` a valid column index.
    func writeJSON(at index: Int, dateFormat: DateFormat, to out: inout ChunkedOutput)

    /// Writes the current row as the compact object `layout` describes (made for this
    /// cursor's columns): exactly the bytes `layout.write(to:)` writes with each value from
    /// ``writeJSON(at:dateFormat:to:)`` (the default), in one call per row, so that a cursor can
    /// check where it is and find its buffers once per row rather than once per value. Called
    /// only while the cursor is on a row.
    func writeJSONObject(_ layout: CompactObjectLayout, dateFormat: DateFormat, to out: inout ChunkedOutput)
}

extension JSONWritingCursor {
    public func writeJSONObject(_ layout: CompactObjectLayout, dateFormat: DateFormat, to out: inout ChunkedOutput) {
        layout.write(to: &out) { column, out in self.writeJSON(at: column, dateFormat: dateFormat, to: &out) }
    }
}

/// A child row held in memory for a window of parents, with its own attached arrays.
struct BufferedRow: RowValues, Sendable {
    var values: [SQLValue]
    /// `children[i]` holds the rows of attachment `i`.
    var children: [[BufferedRow]]

    func value(at index: Int) -> SQLValue { self.values[index] }
}

/// The encoded layout of an attached array: its object plan and its own attachments'.
struct AttachmentLayout: Sendable {
    var plan: ObjectPlan
    var children: [AttachmentLayout]
}

/// Writes rows in one ``OutputFormat`` and ``ResultShape`` into a ``ChunkedOutput``.
///
/// Call ``begin()``, then ``row(_:children:)`` for each row, then ``end()``; the encoder
/// never holds more than the row it is writing. Noncopyable, as its ``ChunkedOutput`` is.
struct RowEncoder: ~Copyable {
    let format: OutputFormat
    let shape: ResultShape
    let columns: [Column]
    let plan: ObjectPlan
    let dateFormat: DateFormat
    var out: ChunkedOutput
    private var rowCount = 0
    /// For a compact object of plain columns, the plan's ``ObjectPlan/compactLayout``, from
    /// which the object is written without walking ``plan``. Nil for other formats and plans.
    private let compactLayout: CompactObjectLayout?

    init(format: OutputFormat, shape: ResultShape, columns: [Column], attachmentKeys: [String], dateFormat: DateFormat, sink: any ByteSink) {
        self.format = format
        self.shape = shape
        self.columns = columns
        self.plan = ObjectPlan.of(columns: columns, attachmentKeys: attachmentKeys)
        self.dateFormat = dateFormat
        self.out = ChunkedOutput(sink: sink)
        let isCompactObject = format == .jsonLines || (format == .json(pretty: false) && shape != .scalar)
        self.compactLayout = isCompactObject ? self.plan.compactLayout : nil
    }

    private var indent: Int? {
        if case .json(pretty: true) = self.format { return 0 }
        return nil
    }

    mutating func begin() {
        switch (self.format, self.shape) {
        case (.json, .array):
            self.out.append(UInt8(ascii: "["))
        case (.csv, .scalar):
            if let first = self.columns.first { CSVText.writeField(.text(first.label), dateFormat: self.dateFormat, to: &self.out) }
            self.out.append("\r\n")
        case (.csv, _):
            for (index, column) in self.columns.enumerated() {
                if index > 0 { self.out.append(UInt8(ascii: ",")) }
                CSVText.writeField(.text(column.label), dateFormat: self.dateFormat, to: &self.out)
            }
            self.out.append("\r\n")
        default:
            break
        }
    }

    mutating func row(_ values: some RowValues, children: [(AttachmentLayout, [BufferedRow])]) throws {
        defer { self.rowCount += 1 }
        switch self.format {
        case .json(let pretty):
            if self.shape == .scalar {
                JSONText.writeValue(values.value(at: 0), dateFormat: self.dateFormat, to: &self.out)
                return
            }
            if self.shape == .array {
                if self.rowCount > 0 { self.out.append(UInt8(ascii: ",")) }
                if pretty { self.newline(depth: 1) }
            }
            if let layout = self.compactLayout {
                values.writeJSONObject(layout, dateFormat: self.dateFormat, to: &self.out)
            } else {
                self.writeObject(self.plan, values, children: children, depth: pretty ? (self.shape == .array ? 1 : 0) : nil)
            }
        case .jsonLines:
            if self.shape == .scalar {
                JSONText.writeValue(values.value(at: 0), dateFormat: self.dateFormat, to: &self.out)
            } else if let layout = self.compactLayout {
                values.writeJSONObject(layout, dateFormat: self.dateFormat, to: &self.out)
            } else {
                self.writeObject(self.plan, values, children: children, depth: nil)
            }
            self.out.append(UInt8(ascii: "\n"))
        case .csv:
            let count = self.shape == .scalar ? 1 : self.columns.count
            for index in 0..<count {
                if index > 0 { self.out.append(UInt8(ascii: ",")) }
                CSVText.writeField(values.value(at: index), dateFormat: self.dateFormat, to: &self.out)
            }
            self.out.append("\r\n")
        case .raw:
            switch values.value(at: 0) {
            case .null where self.rowCount == 0: throw RowStreamError.noRow
            case .null: break
            case .bytes(let bytes): self.out.append(contentsOf: bytes)
            case .text(let text): self.out.append(contentsOf: text.utf8)
            case let value: JSONText.writeValue(value, dateFormat: self.dateFormat, to: &self.out)
            }
        }
        try self.out.flushIfFull()
    }

    mutating func end() throws {
        if case .json(let pretty) = self.format, self.shape == .array {
            if pretty && self.rowCount > 0 { self.newline(depth: 0) }
            self.out.append(UInt8(ascii: "]"))
        }
        if case .json(pretty: true) = self.format { self.out.append(UInt8(ascii: "\n")) }
        try self.out.finish()
    }

    private mutating func newline(depth: Int) {
        self.out.append(UInt8(ascii: "\n"))
        for _ in 0..<depth { self.out.append("  ") }
    }

    /// Writes a row whose attached arrays are streamed rather than held: its columns as
    /// ``row(_:children:)`` writes them, then for each attachment the key and an array whose
    /// elements `elements(&encoder, attachment, depth)` writes with ``element(_:layout:depth:first:)``
    /// as it reads them, returning how many it wrote. JSON and JSON Lines only (CSV holds no
    /// arrays). The bytes are those ``row(_:children:)`` writes for the same rows.
    mutating func streamedRow(
        _ values: some RowValues, elements: (inout RowEncoder, _ attachment: Int, _ depth: Int?) throws -> Int
    ) throws {
        defer { self.rowCount += 1 }
        var depth: Int?
        if case .json(let pretty) = self.format {
            if self.shape == .array {
                if self.rowCount > 0 { self.out.append(UInt8(ascii: ",")) }
                if pretty { self.newline(depth: 1) }
            }
            if pretty { depth = self.shape == .array ? 1 : 0 }
        }
        try self.writeObject(self.plan, values, depth: depth) { encoder, index, depth in
            try elements(&encoder, index, depth)
        }
        if self.format == .jsonLines { self.out.append(UInt8(ascii: "\n")) }
        try self.out.flushIfFull()
    }

    /// Writes one element of a streamed attached array (``streamedRow(_:elements:)``): `row`
    /// with its own attachments, laid out by `layout`; `depth` is the one `elements` was given.
    mutating func element(_ row: BufferedRow, layout: AttachmentLayout, depth: Int?, first: Bool) throws {
        self.writeElement(row, layout: layout, depth: depth, first: first)
        try self.out.flushIfFull()
    }

    /// Writes `row` as an element of an attached array, after a comma unless it is the first.
    private mutating func writeElement(_ row: BufferedRow, layout: AttachmentLayout, depth: Int?, first: Bool) {
        if !first { self.out.append(UInt8(ascii: ",")) }
        if let depth { self.newline(depth: depth + 2) }
        let grandchildren = zip(layout.children, row.children).map { ($0, $1) }
        self.writeObject(layout.plan, row, children: grandchildren, depth: depth.map { $0 + 2 })
    }

    /// Writes one object; `depth` is nil for compact output, else the indentation level.
    private mutating func writeObject(_ plan: ObjectPlan, _ values: some RowValues, children: [(AttachmentLayout, [BufferedRow])], depth: Int?) {
        self.writeObject(plan, values, depth: depth) { encoder, index, depth in
            let (layout, rows) = children[index]
            for (position, row) in rows.enumerated() {
                encoder.writeElement(row, layout: layout, depth: depth, first: position == 0)
            }
            return rows.count
        }
    }

    /// Writes one object whose attached arrays' elements `elements(&encoder, attachment, depth)`
    /// writes (returning how many); `depth` is nil for compact output, else the indentation level.
    private mutating func writeObject(
        _ plan: ObjectPlan, _ values: some RowValues, depth: Int?, elements: (inout RowEncoder, Int, Int?) throws -> Int
    ) rethrows {
        self.out.append(UInt8(ascii: "{"))
        for (position, member) in plan.members.enumerated() {
            if position > 0 { self.out.append(UInt8(ascii: ",")) }
            if let depth { self.newline(depth: depth + 1) }
            switch member {
            case .column(let key, let index):
                self.out.append(contentsOf: key)
                self.out.append(UInt8(ascii: ":"))
                if depth != nil { self.out.append(UInt8(ascii: " ")) }
                values.writeJSON(at: index, dateFormat: self.dateFormat, to: &self.out)
            case .object(let key, let nested):
                self.out.append(contentsOf: key)
                self.out.append(UInt8(ascii: ":"))
                if depth != nil { self.out.append(UInt8(ascii: " ")) }
                self.writeObject(nested, values, children: [], depth: depth.map { $0 + 1 })
            case .attachment(let key, let index):
                self.out.append(contentsOf: key)
                self.out.append(UInt8(ascii: ":"))
                if depth != nil { self.out.append(UInt8(ascii: " ")) }
                self.out.append(UInt8(ascii: "["))
                let count = try elements(&self, index, depth)
                if let depth, count > 0 { self.newline(depth: depth + 1) }
                self.out.append(UInt8(ascii: "]"))
            }
        }
        if let depth, !plan.members.isEmpty { self.newline(depth: depth) }
        self.out.append(UInt8(ascii: "}"))
    }
}

/// CSV fields (RFC 4180): quoted when they hold a comma, quote, CR or LF.
enum CSVText {
    static func writeField(_ value: SQLValue, dateFormat: DateFormat, to out: inout ChunkedOutput) {
        switch value {
        case .null:
            break
        case .text(let text), .time(let text), .json(let text):
            self.writeText(text, to: &out)
        case .integer, .double, .decimal, .bool, .date, .timestamp:
            JSONText.writeValue(value, dateFormat: dateFormat, to: &out)
        case .bytes(let bytes):
            JSONText.writeBase64(bytes, to: &out)
        case .array:
            let sink = CollectingSink()
            var json = ChunkedOutput(sink: sink)
            JSONText.writeValue(value, dateFormat: dateFormat, to: &json)
            try? json.finish()
            self.writeText(sink.text, to: &out)
        }
    }

    private static func writeText(_ text: String, to out: inout ChunkedOutput) {
        let needsQuotes = text.utf8.contains { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 0x0A || $0 == 0x0D }
        guard needsQuotes else {
            out.append(contentsOf: text.utf8)
            return
        }
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            if byte == UInt8(ascii: "\"") { out.append(UInt8(ascii: "\"")) }
            out.append(byte)
        }
        out.append(UInt8(ascii: "\""))
    }
}
