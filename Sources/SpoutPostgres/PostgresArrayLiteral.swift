import SpoutCore

/// Parses PostgreSQL's text output of an array (`{1,2,NULL}`, `{"a\"b","c,d"}`,
/// `[0:1]={1,2}`, `{{1,2},{3,4}}`) into ``SQLValue/array(_:)``.
///
/// Elements are decoded with the rules of their element type (``PostgresTextDecoder``);
/// unquoted `NULL` is SQL NULL, quoted `"NULL"` is text. Bounds decorations are ignored.
/// Multi-dimensional arrays become nested arrays. A literal that does not parse (PostgreSQL
/// never sends one) falls back to `.text` with the raw text.
enum PostgresArrayLiteral {
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>, element: PostgresScalarKind) -> SQLValue {
        var parser = Parser(bytes: bytes, element: element)
        if let values = parser.parseTopLevel() {
            return .array(values)
        }
        return .text(PostgresTextDecoder.string(bytes))
    }

    private struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        let element: PostgresScalarKind
        var index = 0
        /// The current element with quotes and escapes removed; reused between elements.
        var scratch: [UInt8] = []

        init(bytes: UnsafeBufferPointer<UInt8>, element: PostgresScalarKind) {
            self.bytes = bytes
            self.element = element
        }

        mutating func parseTopLevel() -> [SQLValue]? {
            if self.peek == UInt8(ascii: "[") {
                // Dimension decoration: [lower:upper][...]={...}
                while let byte = self.peek, byte != UInt8(ascii: "=") { self.index += 1 }
                guard self.peek == UInt8(ascii: "=") else { return nil }
                self.index += 1
            }
            guard let values = self.parseArray() else { return nil }
            self.skipWhitespace()
            return self.index == self.bytes.count ? values : nil
        }

        var peek: UInt8? {
            self.index < self.bytes.count ? self.bytes[self.index] : nil
        }

        mutating func skipWhitespace() {
            while let byte = self.peek, byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n")
                || byte == UInt8(ascii: "\r")
            {
                self.index += 1
            }
        }

        /// Parses `{...}` starting at the current `{`.
        mutating func parseArray() -> [SQLValue]? {
            self.skipWhitespace()
            guard self.peek == UInt8(ascii: "{") else { return nil }
            self.index += 1
            var values: [SQLValue] = []
            self.skipWhitespace()
            if self.peek == UInt8(ascii: "}") {
                self.index += 1
                return values
            }
            while true {
                self.skipWhitespace()
                guard let byte = self.peek else { return nil }
                if byte == UInt8(ascii: "{") {
                    guard let nested = self.parseArray() else { return nil }
                    values.append(.array(nested))
                } else if byte == UInt8(ascii: "\"") {
                    guard self.readQuoted() else { return nil }
                    values.append(self.decodeScratch())
                } else {
                    guard let isNull = self.readUnquoted() else { return nil }
                    values.append(isNull ? .null : self.decodeScratch())
                }
                self.skipWhitespace()
                guard let separator = self.peek else { return nil }
                self.index += 1
                if separator == UInt8(ascii: "}") { return values }
                guard separator == UInt8(ascii: ",") else { return nil }
            }
        }

        /// Reads `"..."` into `scratch`, undoing backslash escapes.
        mutating func readQuoted() -> Bool {
            self.scratch.removeAll(keepingCapacity: true)
            self.index += 1
            while let byte = self.peek {
                self.index += 1
                if byte == UInt8(ascii: "\"") { return true }
                if byte == UInt8(ascii: "\\") {
                    guard let escaped = self.peek else { return false }
                    self.scratch.append(escaped)
                    self.index += 1
                } else {
                    self.scratch.append(byte)
                }
            }
            return false
        }

        /// Reads an unquoted element into `scratch`; returns whether it is `NULL`, or nil.
        mutating func readUnquoted() -> Bool? {
            self.scratch.removeAll(keepingCapacity: true)
            var sawEscape = false
            while let byte = self.peek, byte != UInt8(ascii: ","), byte != UInt8(ascii: "}") {
                self.index += 1
                if byte == UInt8(ascii: "\\") {
                    guard let escaped = self.peek else { return nil }
                    self.scratch.append(escaped)
                    self.index += 1
                    sawEscape = true
                } else {
                    self.scratch.append(byte)
                }
            }
            while let last = self.scratch.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") {
                self.scratch.removeLast()
            }
            guard !self.scratch.isEmpty else { return nil }
            return !sawEscape && self.scratchIsNull
        }

        /// Whether `scratch` spells `NULL` (case-insensitively).
        var scratchIsNull: Bool {
            self.scratch.count == 4 && self.scratch[0] | 0x20 == UInt8(ascii: "n") && self.scratch[1] | 0x20 == UInt8(ascii: "u")
                && self.scratch[2] | 0x20 == UInt8(ascii: "l") && self.scratch[3] | 0x20 == UInt8(ascii: "l")
        }

        func decodeScratch() -> SQLValue {
            self.scratch.withUnsafeBufferPointer { PostgresTextDecoder.decode($0, as: self.element) }
        }
    }
}
