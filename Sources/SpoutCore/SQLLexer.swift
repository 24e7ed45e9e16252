/// Splits SQL text into verbatim SQL and `:name` parameters.
///
/// Recognised and left alone:
/// - `'...'` strings with `''` inside; `E'...'` strings with backslash escapes;
/// - `"quoted identifiers"` with `""` inside;
/// - `$tag$ ... $tag$` dollar quoting (empty or identifier tag), but not `$1` placeholders;
/// - `-- comments` to the end of the line and nested `/* ... */` comments;
/// - `::` casts, so `:employeeNumber::int` is the parameter followed by a cast.
///
/// A parameter name starts with a letter or `_` and continues with letters, digits and `_`.
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
            switch byte {
            case UInt8(ascii: "'"):
                let escapes = index > 0 && (bytes[index - 1] | 0x20) == UInt8(ascii: "e")
                    && (index < 2 || !isIdentifierByte(bytes[index - 2]))
                index = try skipQuoted(bytes, from: index, quote: byte, backslashEscapes: escapes) {
                    error("unterminated string", at: $0)
                }
            case UInt8(ascii: "\""):
                index = try skipQuoted(bytes, from: index, quote: byte, backslashEscapes: false) {
                    error("unterminated quoted identifier", at: $0)
                }
            case UInt8(ascii: "-") where index + 1 < count && bytes[index + 1] == UInt8(ascii: "-"):
                index += 2
                while index < count && bytes[index] != UInt8(ascii: "\n") { index += 1 }
            case UInt8(ascii: "/") where index + 1 < count && bytes[index + 1] == UInt8(ascii: "*"):
                let start = index
                var depth = 0
                repeat {
                    if index + 1 < count && bytes[index] == UInt8(ascii: "/") && bytes[index + 1] == UInt8(ascii: "*") {
                        depth += 1
                        index += 2
                    } else if index + 1 < count && bytes[index] == UInt8(ascii: "*") && bytes[index + 1] == UInt8(ascii: "/") {
                        depth -= 1
                        index += 2
                    } else if index < count {
                        index += 1
                    } else {
                        throw error("unterminated comment", at: start)
                    }
                } while depth > 0
            case UInt8(ascii: "$") where index == 0 || !isIdentifierByte(bytes[index - 1]):
                guard let tagEnd = dollarTagEnd(bytes, from: index) else {
                    index += 1
                    continue
                }
                let tag = bytes[index...tagEnd]
                var search = tagEnd + 1
                var closed = false
                while search + tag.count <= count {
                    if bytes[search] == UInt8(ascii: "$") && bytes[search..<(search + tag.count)].elementsEqual(tag) {
                        closed = true
                        break
                    }
                    search += 1
                }
                guard closed else { throw error("unterminated dollar quote", at: index) }
                index = search + tag.count
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
                while nameEnd < count && isIdentifierByte(bytes[nameEnd]) && bytes[nameEnd] != UInt8(ascii: "$") {
                    nameEnd += 1
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

    /// Skips a quoted run starting at `start` (the opening quote); returns the index after the
    /// closing quote. A doubled quote stands for itself; with `backslashEscapes`, so does `\x`.
    private static func skipQuoted(
        _ bytes: [UInt8], from start: Int, quote: UInt8, backslashEscapes: Bool,
        unterminated: (Int) -> SQLSyntaxError
    ) throws -> Int {
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
        throw unterminated(start)
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
