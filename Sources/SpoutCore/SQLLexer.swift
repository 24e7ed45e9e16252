/// Reads SQL text into ``SQLToken``s, in PostgreSQL's and SQLite's syntax. Every reader of
/// statement text in Core and the endpoints consumes these tokens instead of scanning
/// characters: named parameters (``ParsedSQL``), optional clauses (``OptionalClauses``),
/// keyset pages (``KeysetQuery``) and the endpoints' column labels. So they agree on what is
/// a word, a parameter, a string, a quoted identifier or a comment.
///
/// Recognised (see ``SQLToken/Kind`` for each kind):
/// - `'...'` strings with `''` inside; `E'...'` strings with backslash escapes;
/// - `"quoted identifiers"` with `""` inside and `` `quoted identifiers` `` with ` `` ` inside;
/// - `$tag$ ... $tag$` dollar quoting (empty or identifier tag), but not `$1` placeholders;
/// - `-- comments` to the end of the line and nested `/* ... */` comments;
/// - `:name` parameters, dotted ones (`:claims.sub`) included, and `::` casts, so
///   `:employeeNumber::int` is the parameter followed by a cast.
///
/// Every byte belongs to exactly one token, and lexing is linear in the length of the text.
/// An unterminated string, quoted identifier, comment or dollar quote throws
/// ``SQLSyntaxError`` with the offset where it starts (for `E'...'`, the offset of the quote);
/// after that, ``next()`` returns nil. A `:` that starts no parameter is punctuation here:
/// whether it is an error is for the reader to say (``ParsedSQL`` says it is).
public struct SQLLexer: Sendable {
    /// The UTF-8 bytes of the source; every token's range indexes them.
    public let bytes: [UInt8]
    private var index = 0

    public init(_ source: String) {
        self.init(bytes: Array(source.utf8))
    }

    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Every token of `source`, in order.
    public static func tokens(of source: String) throws(SQLSyntaxError) -> [SQLToken] {
        var lexer = SQLLexer(source)
        var tokens: [SQLToken] = []
        while let token = try lexer.next() { tokens.append(token) }
        return tokens
    }

    /// The offset in `bytes` where the statement's code ends: after its last token that is
    /// neither trivia nor `;`. What follows (semicolons, whitespace, comments) ends a
    /// statement and has no place where it is wrapped in a subquery (a page, a detail batch).
    public static func codeEnd(of bytes: [UInt8]) throws(SQLSyntaxError) -> Int {
        var lexer = SQLLexer(bytes: bytes)
        var end = 0
        while let token = try lexer.next() {
            if !token.isTrivia && !token.isPunctuation(";", in: bytes) { end = token.range.upperBound }
        }
        return end
    }

    /// The next token; nil at the end of the text and after an error.
    public mutating func next() throws(SQLSyntaxError) -> SQLToken? {
        let start = self.index
        guard start < self.bytes.count else { return nil }
        let kind: SQLToken.Kind
        do {
            (kind, self.index) = try self.token(at: start)
        } catch {
            self.index = self.bytes.count
            throw SQLSyntaxError(in: self.bytes, offset: error.offset, reason: "unterminated \(error.what)")
        }
        return SQLToken(kind: kind, range: start..<self.index)
    }

    /// A run that starts with its opening quote or comment marker and never ends.
    private struct Unterminated: Error {
        /// `string`, `quoted identifier`, `comment` or `dollar quote`.
        var what: String
        var offset: Int
    }

    /// The kind of the token that starts at `start`, and the index just after it.
    private func token(at start: Int) throws(Unterminated) -> (SQLToken.Kind, Int) {
        let bytes = self.bytes
        let count = bytes.count
        let byte = bytes[start]
        let next: UInt8? = start + 1 < count ? bytes[start + 1] : nil
        let followsCode = start > 0 && Self.isIdentifierByte(bytes[start - 1])
        if (byte | 0x20) == UInt8(ascii: "e") && next == UInt8(ascii: "'") && !followsCode {
            guard let end = Self.closingQuote(bytes, after: start + 1, backslashEscapes: true) else {
                throw Unterminated(what: "string", offset: start + 1)
            }
            return (.string, end)
        }
        switch byte {
        case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"):
            var end = start + 1
            while end < count && Self.isWhitespace(bytes[end]) { end += 1 }
            return (.whitespace, end)
        case UInt8(ascii: "'"):
            guard let end = Self.closingQuote(bytes, after: start, backslashEscapes: false) else {
                throw Unterminated(what: "string", offset: start)
            }
            return (.string, end)
        case UInt8(ascii: "\""), UInt8(ascii: "`"):
            guard let end = Self.closingQuote(bytes, after: start, backslashEscapes: false) else {
                throw Unterminated(what: "quoted identifier", offset: start)
            }
            return (.quotedIdentifier, end)
        case UInt8(ascii: "-") where next == UInt8(ascii: "-"):
            var end = start + 2
            while end < count && bytes[end] != UInt8(ascii: "\n") { end += 1 }
            return (.comment, end)
        case UInt8(ascii: "/") where next == UInt8(ascii: "*"):
            guard let end = Self.blockCommentEnd(bytes, from: start) else {
                throw Unterminated(what: "comment", offset: start)
            }
            return (.comment, end)
        case UInt8(ascii: "$") where !followsCode:
            guard let tagEnd = Self.dollarTagEnd(bytes, from: start) else { return (.punctuation, start + 1) }
            guard let end = Self.closingDollarTag(bytes, tag: start...tagEnd) else {
                throw Unterminated(what: "dollar quote", offset: start)
            }
            return (.dollarQuotedString, end)
        case UInt8(ascii: ":") where next == UInt8(ascii: ":"):
            return (.cast, start + 2)
        case UInt8(ascii: ":"):
            guard let next, Self.isIdentifierStart(next) else { return (.punctuation, start + 1) }
            return (.parameter, Self.parameterNameEnd(bytes, from: start + 1))
        case UInt8(ascii: "("):
            return (.openParenthesis, start + 1)
        case UInt8(ascii: ")"):
            return (.closeParenthesis, start + 1)
        case UInt8(ascii: "0")...UInt8(ascii: "9"):
            var end = start + 1
            while end < count {
                if Self.isIdentifierByte(bytes[end]) {
                    end += 1
                } else if bytes[end] == UInt8(ascii: "."), end + 1 < count, Self.isDigit(bytes[end + 1]) {
                    end += 2
                } else {
                    break
                }
            }
            return (.number, end)
        default:
            guard Self.isIdentifierStart(byte) else { return (.punctuation, start + 1) }
            var end = start + 1
            while end < count && Self.isIdentifierByte(bytes[end]) { end += 1 }
            return (.word, end)
        }
    }

    /// The index after the quote that closes the quoted run whose opening quote is at `start`;
    /// nil when none does. A doubled quote stands for itself; with `backslashEscapes`, a
    /// backslash escapes the byte after it.
    private static func closingQuote(_ bytes: [UInt8], after start: Int, backslashEscapes: Bool) -> Int? {
        let quote = bytes[start]
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

    /// The index after the `*/` that closes the (nesting) block comment opened at `start`.
    private static func blockCommentEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        var depth = 0
        repeat {
            if index + 1 < bytes.count && bytes[index] == UInt8(ascii: "/") && bytes[index + 1] == UInt8(ascii: "*") {
                depth += 1
                index += 2
            } else if index + 1 < bytes.count && bytes[index] == UInt8(ascii: "*") && bytes[index + 1] == UInt8(ascii: "/") {
                depth -= 1
                index += 2
            } else if index < bytes.count {
                index += 1
            } else {
                return nil
            }
        } while depth > 0
        return index
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

    /// The index after the first repetition of `tag` after it; nil when there is none.
    private static func closingDollarTag(_ bytes: [UInt8], tag: ClosedRange<Int>) -> Int? {
        let tagBytes = bytes[tag]
        var search = tag.upperBound + 1
        while search + tagBytes.count <= bytes.count {
            if bytes[search] == UInt8(ascii: "$") && bytes[search..<(search + tagBytes.count)].elementsEqual(tagBytes) {
                return search + tagBytes.count
            }
            search += 1
        }
        return nil
    }

    /// The end of the parameter name that starts at `start` (an identifier start): letters,
    /// digits, `_` and non-ASCII bytes, and `.` when a name start follows it.
    private static func parameterNameEnd(_ bytes: [UInt8], from start: Int) -> Int {
        var end = start + 1
        while end < bytes.count {
            if isIdentifierByte(bytes[end]) && bytes[end] != UInt8(ascii: "$") {
                end += 1
            } else if bytes[end] == UInt8(ascii: "."), end + 1 < bytes.count, isIdentifierStart(bytes[end + 1]) {
                end += 2
            } else {
                break
            }
        }
        return end
    }

    @inline(__always)
    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
    }

    @inline(__always)
    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    @inline(__always)
    private static func isIdentifierStart(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || byte == UInt8(ascii: "_") || byte >= 0x80
    }

    @inline(__always)
    private static func isIdentifierByte(_ byte: UInt8) -> Bool {
        isIdentifierStart(byte) || isDigit(byte) || byte == UInt8(ascii: "$")
    }
}

/// SQL text that cannot be read: an unterminated string, quoted identifier, comment or dollar
/// quote (``SQLLexer``), or a `:` that names no parameter (``ParsedSQL``).
public struct SQLSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The UTF-8 byte offset of the problem in the SQL text (0-based).
    public let offset: Int
    /// 1-based line and column (in UTF-8 bytes) of ``offset``.
    public let line: Int
    public let column: Int
    public let reason: String

    init(in bytes: [UInt8], offset: Int, reason: String) {
        self.offset = offset
        (self.line, self.column) = Self.lineAndColumn(of: offset, in: bytes)
        self.reason = reason
    }

    /// The 1-based line and column (in UTF-8 bytes) of `offset` in `bytes`.
    static func lineAndColumn(of offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
        var line = 1
        var lineStart = 0
        for position in 0..<min(offset, bytes.count) where bytes[position] == UInt8(ascii: "\n") {
            line += 1
            lineStart = position + 1
        }
        return (line, offset - lineStart + 1)
    }

    public var description: String { "\(self.reason) at offset \(self.offset) (line \(self.line), column \(self.column))" }
}
