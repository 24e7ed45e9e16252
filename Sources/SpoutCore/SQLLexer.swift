/// Splits SQL text into verbatim SQL and `:name` parameters.
///
/// Recognised and left alone:
/// - `'...'` strings with `''` inside; `E'...'` strings with backslash escapes;
/// - `"quoted identifiers"` with `""` inside;
/// - `$tag$ ... $tag$` dollar quoting (empty or identifier tag), but not `$1` placeholders;
/// - `-- comments` to the end of the line and nested `/* ... */` comments;
/// - `::` casts, so `:employeeNumber::int` is the parameter followed by a cast.
///
/// A parameter name starts with a letter or `_` and continues with letters, digits and `_`;
/// a `.` followed by such a name continues it, so `:claims.sub` and `:claims.address.city`
/// are one parameter each (a name never ends with `.`: in `:name.` the dot is SQL).
/// A lone `:` (not followed by such a name, and not part of `::`) and an unterminated string,
/// identifier, comment or dollar quote are errors that carry the offset.
public enum SQLLexer {
    public static func segments(of source: String) throws -> [ParsedSQL.Segment] {
        let bytes = Array(source.utf8)
        var segments: [ParsedSQL.Segment] = []
        var verbatimStart = 0
        var index = 0
        let count = bytes.count

        func error(_ reason: String, at offset: Int) -> SQLSyntaxError {
            var line = 1
            var lineStart = 0
            for position in 0..<min(offset, count) where bytes[position] == UInt8(ascii: "\n") {
                line += 1
                lineStart = position + 1
            }
            return SQLSyntaxError(offset: offset, line: line, column: offset - lineStart + 1, reason: reason)
        }

        func flushVerbatim(upTo end: Int) {
            if end > verbatimStart {
                segments.append(.sql(String(decoding: bytes[verbatimStart..<end], as: UTF8.self)))
            }
        }

        while index < count {
            let byte = bytes[index]
            do {
                if let run = try Self.quotedRun(in: bytes, at: index) {
                    index = run.end
                    continue
                }
            } catch let unterminated {
                throw error("unterminated \(unterminated.what)", at: unterminated.offset)
            }
            switch byte {
            case UInt8(ascii: ":"):
                if index + 1 < count && bytes[index + 1] == UInt8(ascii: ":") {
                    index += 2
                    continue
                }
                let nameStart = index + 1
                guard nameStart < count, isIdentifierStart(bytes[nameStart]) else {
                    throw error("parameter without a name", at: index)
                }
                var nameEnd = nameStart + 1
                while nameEnd < count {
                    if isIdentifierByte(bytes[nameEnd]) && bytes[nameEnd] != UInt8(ascii: "$") {
                        nameEnd += 1
                    } else if bytes[nameEnd] == UInt8(ascii: "."), nameEnd + 1 < count, isIdentifierStart(bytes[nameEnd + 1]) {
                        nameEnd += 2
                    } else {
                        break
                    }
                }
                flushVerbatim(upTo: index)
                segments.append(.parameter(String(decoding: bytes[nameStart..<nameEnd], as: UTF8.self)))
                index = nameEnd
                verbatimStart = nameEnd
            default:
                index += 1
            }
        }
        flushVerbatim(upTo: count)
        return segments
    }

    /// A run of SQL text that is not code: a string literal, a quoted identifier, a comment or
    /// a dollar-quoted string, in PostgreSQL's and SQLite's syntax (including `E'...'` strings
    /// with backslash escapes and nested `/* ... */` comments).
    public enum QuotedRun: Sendable, Hashable {
        case string
        /// A `"quoted"` identifier, with doubled quotes undone.
        case identifier(String)
        case comment
        case dollarQuoted
    }

    /// A run that starts with its opening quote or comment marker and never ends.
    public struct Unterminated: Error, Sendable, Hashable {
        /// `string`, `quoted identifier`, `comment` or `dollar quote`.
        public var what: String
        /// Where the run starts (a byte offset).
        public var offset: Int

        public init(what: String, offset: Int) {
            self.what = what
            self.offset = offset
        }
    }

    /// The string, quoted identifier, comment or dollar-quoted string that starts at `index`
    /// of `bytes`, and the index just after it; nil when code starts there. The one scanner
    /// for such runs: ``segments(of:)`` and every other reader of SQL text use it, so they
    /// agree on where code is.
    public static func quotedRun(in bytes: [UInt8], at index: Int) throws(Unterminated) -> (run: QuotedRun, end: Int)? {
        let count = bytes.count
        switch bytes[index] {
        case UInt8(ascii: "'"):
            let escapes = index > 0 && (bytes[index - 1] | 0x20) == UInt8(ascii: "e")
                && (index < 2 || !isIdentifierByte(bytes[index - 2]))
            guard let end = skipQuoted(bytes, from: index, quote: UInt8(ascii: "'"), backslashEscapes: escapes) else {
                throw Unterminated(what: "string", offset: index)
            }
            return (.string, end)
        case UInt8(ascii: "\""):
            guard let end = skipQuoted(bytes, from: index, quote: UInt8(ascii: "\""), backslashEscapes: false) else {
                throw Unterminated(what: "quoted identifier", offset: index)
            }
            let inner = String(decoding: bytes[(index + 1)..<(end - 1)], as: UTF8.self)
            return (.identifier(inner.replacing("\"\"", with: "\"")), end)
        case UInt8(ascii: "-") where index + 1 < count && bytes[index + 1] == UInt8(ascii: "-"):
            var end = index + 2
            while end < count && bytes[end] != UInt8(ascii: "\n") { end += 1 }
            return (.comment, end)
        case UInt8(ascii: "/") where index + 1 < count && bytes[index + 1] == UInt8(ascii: "*"):
            var end = index
            var depth = 0
            repeat {
                if end + 1 < count && bytes[end] == UInt8(ascii: "/") && bytes[end + 1] == UInt8(ascii: "*") {
                    depth += 1
                    end += 2
                } else if end + 1 < count && bytes[end] == UInt8(ascii: "*") && bytes[end + 1] == UInt8(ascii: "/") {
                    depth -= 1
                    end += 2
                } else if end < count {
                    end += 1
                } else {
                    throw Unterminated(what: "comment", offset: index)
                }
            } while depth > 0
            return (.comment, end)
        case UInt8(ascii: "$") where index == 0 || !isIdentifierByte(bytes[index - 1]):
            guard let tagEnd = dollarTagEnd(bytes, from: index) else { return nil }
            let tag = bytes[index...tagEnd]
            var search = tagEnd + 1
            while search + tag.count <= count {
                if bytes[search] == UInt8(ascii: "$") && bytes[search..<(search + tag.count)].elementsEqual(tag) {
                    return (.dollarQuoted, search + tag.count)
                }
                search += 1
            }
            throw Unterminated(what: "dollar quote", offset: index)
        default:
            return nil
        }
    }

    /// Skips a quoted run starting at `start` (the opening quote); returns the index after the
    /// closing quote, or nil when there is none. A doubled quote stands for itself; with
    /// `backslashEscapes`, so does `\x`.
    private static func skipQuoted(_ bytes: [UInt8], from start: Int, quote: UInt8, backslashEscapes: Bool) -> Int? {
        var index = start + 1
        while index < bytes.count {
            let byte = bytes[index]
            if backslashEscapes && byte == UInt8(ascii: "\\") {
                index += 2
                continue
            }
            if byte == quote {
                if index + 1 < bytes.count && bytes[index + 1] == quote {
                    index += 2
                    continue
                }
                return index + 1
            }
            index += 1
        }
        return nil
    }

    /// If a dollar-quote opening tag (`$$` or `$tag$`) starts at `start`, the index of its
    /// closing `$`; otherwise nil (`$1` placeholders and lone dollars).
    private static func dollarTagEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        var index = start + 1
        guard index < bytes.count else { return nil }
        if bytes[index] == UInt8(ascii: "$") { return index }
        guard isIdentifierStart(bytes[index]) else { return nil }
        index += 1
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "$") { return index }
            guard isIdentifierByte(byte) else { return nil }
            index += 1
        }
        return nil
    }

    @inline(__always)
    static func isIdentifierStart(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || byte == UInt8(ascii: "_") || byte >= 0x80
    }

    @inline(__always)
    static func isIdentifierByte(_ byte: UInt8) -> Bool {
        isIdentifierStart(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "$")
    }
}
