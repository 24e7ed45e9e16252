/// Reads CSV (RFC 4180) into records, a byte at a time: the first row names the parameters,
/// each later row is a record named by the line it starts on (the header is line 1).
///
/// Fields are separated by `,` and rows end with `\n` or `\r\n`; a field in double quotes may
/// hold commas, line ends and `""` for a quote. As in PostgreSQL's `COPY ... CSV`, an empty
/// field without quotes is a null (the parameter is present without a value) and `""` is empty
/// text. An empty line is skipped. A row with another number of fields than the header, a
/// quote inside a field without quotes, a header naming a column twice or none, text that is
/// not UTF-8, or a record larger than `maximumRecordSize` is refused naming its line.
struct CSVRecordReader: Sendable {
    private enum State: Sendable {
        /// At the start of a field.
        case fieldStart
        /// Inside a field without quotes.
        case unquoted
        /// Inside a quoted field.
        case quoted
        /// A quote inside a quoted field: the field's end, or the first of `""`.
        case quoteInQuoted
        /// After `\r` outside quotes: `\n` must follow.
        case carriageReturn
    }

    private let maximumRecordSize: Int
    private var state = State.fieldStart
    /// The header's names, once read.
    private var names: [String]?
    /// The bytes of the row's fields so far, end to end, and where each field ends.
    private var bytes: [UInt8] = []
    private var fieldEnds: [Int] = []
    /// Whether each finished field of the row was quoted.
    private var quoted: [Bool] = []
    private var fieldQuoted = false
    /// The line the byte being read is on, and the line the row started on.
    private var line = 1
    private var rowLine = 1

    init(maximumRecordSize: Int) {
        self.maximumRecordSize = maximumRecordSize
    }

    /// Takes the next byte; returns the record it completes, if any.
    mutating func take(_ byte: UInt8) throws(BulkRecordError) -> BulkRecord? {
        switch self.state {
        case .quoted:
            if byte == UInt8(ascii: "\"") {
                self.state = .quoteInQuoted
            } else {
                if byte == UInt8(ascii: "\n") { self.line += 1 }
                try self.append(byte)
            }
        case .carriageReturn:
            guard byte == UInt8(ascii: "\n") else {
                throw .malformed("a carriage return not followed by a line feed outside quotes", at: .line(self.rowLine))
            }
            defer { self.line += 1 }
            return try self.endRow()
        case .fieldStart, .unquoted, .quoteInQuoted:
            switch byte {
            case UInt8(ascii: ","):
                self.endField()
            case UInt8(ascii: "\n"):
                defer { self.line += 1 }
                return try self.endRow()
            case UInt8(ascii: "\r"):
                self.state = .carriageReturn
            case UInt8(ascii: "\""):
                switch self.state {
                case .fieldStart:
                    self.state = .quoted
                    self.fieldQuoted = true
                case .quoteInQuoted:
                    // `""`: a quote in the field.
                    try self.append(byte)
                    self.state = .quoted
                default:
                    throw .malformed("a quote inside a field without quotes (quote the whole field, and double the quote)", at: .line(self.rowLine))
                }
            default:
                if case .quoteInQuoted = self.state {
                    throw .malformed("a character after the closing quote of a field", at: .line(self.rowLine))
                }
                try self.append(byte)
                self.state = .unquoted
            }
        }
        return nil
    }

    /// Takes the next bytes, calling `each` for every record they complete: the same as
    /// ``take(_:)`` byte by byte, a run of bytes inside a field that ends nothing copied at once.
    mutating func take(_ bytes: UnsafeBufferPointer<UInt8>, _ each: (BulkRecord) throws -> Void) throws {
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let run = self.ordinaryRun(in: bytes, from: index)
            if run > index {
                guard self.bytes.count + (run - index) <= self.maximumRecordSize else {
                    throw BulkRecordError.malformed("record larger than \(self.maximumRecordSize) bytes", at: .line(self.rowLine))
                }
                self.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[index..<run]))
                if case .fieldStart = self.state { self.state = .unquoted }
                index = run
                continue
            }
            if let record = try self.take(bytes[index]) { try each(record) }
            index += 1
        }
    }

    /// Where the bytes from `start` stop being plain field content in the current state: the
    /// first separator, line end or quote (only a quote or a line feed inside quotes), or
    /// `start` itself when the state reads no run (after a quote, after a carriage return).
    private func ordinaryRun(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var end = start
        switch self.state {
        case .fieldStart, .unquoted:
            while end < bytes.endIndex {
                switch bytes[end] {
                case UInt8(ascii: ","), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\""): return end
                default: end += 1
                }
            }
        case .quoted:
            while end < bytes.endIndex, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\n") { end += 1 }
        case .quoteInQuoted, .carriageReturn:
            break
        }
        return end
    }

    /// The body ended: the last row, when it had no line end. A quoted field still open is
    /// refused.
    mutating func finish() throws(BulkRecordError) -> BulkRecord? {
        switch self.state {
        case .quoted:
            throw .malformed("the body ends inside a quoted field", at: .line(self.rowLine))
        case .fieldStart where self.fieldEnds.isEmpty:
            // Nothing since the last line end.
            if self.names == nil { throw .malformed("a CSV body needs a header row of parameter names", at: .line(1)) }
            return nil
        default:
            let record = try self.endRow()
            if self.names == nil { throw .malformed("a CSV body needs a header row of parameter names", at: .line(1)) }
            return record
        }
    }

    private mutating func append(_ byte: UInt8) throws(BulkRecordError) {
        guard self.bytes.count < self.maximumRecordSize else {
            throw .malformed("record larger than \(self.maximumRecordSize) bytes", at: .line(self.rowLine))
        }
        self.bytes.append(byte)
    }

    private mutating func endField() {
        self.fieldEnds.append(self.bytes.count)
        self.quoted.append(self.fieldQuoted)
        self.fieldQuoted = false
        self.state = .fieldStart
    }

    /// Ends the row: the header's names, a record, or nothing for an empty line.
    private mutating func endRow() throws(BulkRecordError) -> BulkRecord? {
        let isEmptyLine = self.fieldEnds.isEmpty && self.bytes.isEmpty && !self.fieldQuoted
        self.endField()
        let position = BulkPosition.line(self.rowLine)
        defer {
            self.bytes.removeAll(keepingCapacity: true)
            self.fieldEnds.removeAll(keepingCapacity: true)
            self.quoted.removeAll(keepingCapacity: true)
            self.rowLine = self.line + 1
        }
        if isEmptyLine { return nil }
        guard let names = self.names else {
            self.names = try self.header(at: position)
            return nil
        }
        guard self.fieldEnds.count == names.count else {
            throw .malformed("\(self.fieldEnds.count) fields where the header names \(names.count)", at: position)
        }
        var arguments = RawArguments(capacity: names.count)
        var start = 0
        for (field, end) in self.fieldEnds.enumerated() {
            defer { start = end }
            let name = names[field]
            if start == end && !self.quoted[field] {
                arguments.markPresent(name)
                continue
            }
            let text = self.bytes.withUnsafeBufferPointer { UTF8Text.validated(UnsafeBufferPointer(rebasing: $0[start..<end])) }
            guard let text else {
                throw BulkRecordError(ArgumentError(.invalidEncoding, parameter: name), at: position)
            }
            arguments.append(text, for: name)
        }
        return BulkRecord(arguments: arguments, position: position)
    }

    private func header(at position: BulkPosition) throws(BulkRecordError) -> [String] {
        var names: [String] = []
        var start = 0
        for end in self.fieldEnds {
            defer { start = end }
            var field = self.bytes[start..<end]
            // A byte order mark some spreadsheets write first.
            if names.isEmpty && field.starts(with: [0xEF, 0xBB, 0xBF]) { field = field.dropFirst(3) }
            guard let name = String(validating: field, as: UTF8.self) else {
                throw .malformed("a header name is not UTF-8", at: position)
            }
            guard !name.isEmpty else { throw .malformed("an empty name in the header row", at: position) }
            guard !names.contains(name) else { throw .malformed("the header names '\(name)' twice", at: position) }
            names.append(name)
        }
        return names
    }
}
