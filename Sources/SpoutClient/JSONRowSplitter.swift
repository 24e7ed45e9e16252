/// Cuts a body into the bytes of its rows as the bytes arrive, without parsing the rows:
/// the elements of a top-level JSON array, or the lines of a JSON Lines body.
///
/// It tracks only nesting depth, strings and escapes, so each row is found in one pass over
/// its bytes; the row itself is decoded by `JSONDecoder` afterwards. What it holds is the
/// unread part of the last chunks fed: at most one chunk plus one partial row, whatever the
/// size of the body.
///
/// Contract: ``feed(_:)`` the chunks in order, take rows with ``nextRow()`` until it returns
/// nil, feed more; at the body's end ``finish()`` returns the last JSON Lines row if any and
/// throws when the body was not complete (an array not closed).
struct JSONRowSplitter {
    enum Format: Sendable, Equatable {
        /// `[row, row, …]` with any JSON whitespace.
        case array
        /// One row a line; blank lines are skipped.
        case lines
    }

    private enum State {
        /// Before the array's `[` (array only).
        case start
        /// After `[` or `,`: a row or (after `[` only) `]` comes next.
        case beforeRow(afterComma: Bool)
        /// Inside a row that started at `rowStart`.
        case inRow
        /// After a row: `,` or `]`.
        case afterRow
        /// After the closing `]`: only whitespace may follow.
        case done
    }

    let format: Format
    private var buffer: [UInt8] = []
    /// Where scanning resumes in `buffer`.
    private var position = 0
    private var state: State
    private var rowStart = 0
    private var depth = 0
    private var inString = false
    private var escaped = false

    init(format: Format) {
        self.format = format
        self.state = format == .array ? .start : .beforeRow(afterComma: false)
    }

    /// Appends the next bytes of the body.
    mutating func feed(_ bytes: [UInt8]) {
        // Drop what was consumed before growing: the buffer holds one partial row at most.
        let keep = self.keepFrom
        if keep > 0 {
            self.buffer.removeSubrange(0..<keep)
            self.position -= keep
            self.rowStart -= keep
        }
        self.buffer += bytes
    }

    /// The first byte still needed: the start of the row being read, or the scan position.
    private var keepFrom: Int {
        if case .inRow = self.state { return self.rowStart }
        return self.position
    }

    /// The bytes of the next complete row, or nil when more bytes are needed.
    mutating func nextRow() throws -> ArraySlice<UInt8>? {
        switch self.format {
        case .array: return try self.nextArrayElement()
        case .lines: return self.nextLine()
        }
    }

    /// Ends the body: the last line of a JSON Lines body without a final newline, or nil;
    /// throws ``SpoutClientError/malformedBody(_:)`` for an array that is not closed.
    mutating func finish() throws -> ArraySlice<UInt8>? {
        switch self.format {
        case .lines:
            let rest = self.buffer[self.position...]
            self.position = self.buffer.count
            return Self.isBlank(rest) ? nil : rest
        case .array:
            guard case .done = self.state else {
                throw SpoutClientError.malformedBody("the JSON array ended early")
            }
            return nil
        }
    }

    private mutating func nextLine() -> ArraySlice<UInt8>? {
        while let newline = self.buffer[self.position...].firstIndex(of: UInt8(ascii: "\n")) {
            let line = self.buffer[self.position..<newline]
            self.position = newline + 1
            if !Self.isBlank(line) { return line }
        }
        return nil
    }

    private mutating func nextArrayElement() throws -> ArraySlice<UInt8>? {
        while self.position < self.buffer.count {
            let byte = self.buffer[self.position]
            switch self.state {
            case .start:
                self.position += 1
                if Self.isWhitespace(byte) { continue }
                guard byte == UInt8(ascii: "[") else { throw SpoutClientError.malformedBody("the body is not a JSON array") }
                self.state = .beforeRow(afterComma: false)
            case .beforeRow(let afterComma):
                if Self.isWhitespace(byte) {
                    self.position += 1
                } else if byte == UInt8(ascii: "]") && !afterComma {
                    self.position += 1
                    self.state = .done
                } else if byte == UInt8(ascii: ",") || byte == UInt8(ascii: "]") {
                    throw SpoutClientError.malformedBody("a row is missing in the JSON array")
                } else {
                    self.rowStart = self.position
                    self.depth = 0
                    self.inString = false
                    self.escaped = false
                    self.state = .inRow
                }
            case .inRow:
                if let end = self.scanRow() {
                    self.state = .afterRow
                    return self.buffer[self.rowStart..<end]
                }
            case .afterRow:
                self.position += 1
                if Self.isWhitespace(byte) { continue }
                if byte == UInt8(ascii: ",") {
                    self.state = .beforeRow(afterComma: true)
                } else if byte == UInt8(ascii: "]") {
                    self.state = .done
                } else {
                    throw SpoutClientError.malformedBody("expected ',' or ']' after a row")
                }
            case .done:
                self.position += 1
                guard Self.isWhitespace(byte) else { throw SpoutClientError.malformedBody("bytes after the JSON array") }
            }
        }
        return nil
    }

    /// Advances through the row being read; its end index once complete, else nil (the whole
    /// buffer was scanned). A scalar row (a number, `true`…) ends before the delimiter that
    /// follows it; an object, array or string row ends after its closing byte.
    private mutating func scanRow() -> Int? {
        while self.position < self.buffer.count {
            let byte = self.buffer[self.position]
            if self.inString {
                self.position += 1
                if self.escaped {
                    self.escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    self.escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    self.inString = false
                    if self.depth == 0 { return self.position }
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                self.inString = true
                self.position += 1
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                self.depth += 1
                self.position += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if self.depth == 0 { return self.position }  // a scalar row before the array's `]`
                self.depth -= 1
                self.position += 1
                if self.depth == 0 { return self.position }
            case UInt8(ascii: ","):
                if self.depth == 0 { return self.position }
                self.position += 1
            default:
                if self.depth == 0 && Self.isWhitespace(byte) { return self.position }
                self.position += 1
            }
        }
        return nil
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    private static func isBlank(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.allSatisfy(Self.isWhitespace)
    }
}
