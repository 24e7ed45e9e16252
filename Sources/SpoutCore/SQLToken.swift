/// One token of SQL text: what ``SQLLexer`` read and where, as a UTF-8 byte range of the source.
///
/// A token holds no text; readers look at the source's bytes through it (``text(in:)``,
/// ``isWord(_:in:)``, ``identifier(in:)``, ``parameterName(in:)``), so reading a statement
/// allocates nothing per token. Laid end to end, the tokens of a source cover it exactly.
public struct SQLToken: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// A keyword or bare identifier: a letter, `_` or non-ASCII byte, then letters, digits,
        /// `_`, `$` and non-ASCII bytes (`SELECT`, `emp_no`, `e`). The one definition of a word.
        case word
        /// A quoted identifier: `"name"` with `""` standing for `"`, or `` `name` `` (SQLite's
        /// and MySQL's quoting) with ` `` ` standing for `` ` ``.
        case quotedIdentifier
        /// A string literal: `'...'` with `''` standing for `'`, or `E'...'` (either case of
        /// `E`) whose backslash escapes a character, PostgreSQL's escape string.
        case string
        /// A dollar-quoted string: `$$...$$` or `$tag$...$tag$` (PostgreSQL); `$1` is no such
        /// thing (it is punctuation, then a number).
        case dollarQuotedString
        /// A digit, then letters, digits, `_`, `$` and non-ASCII bytes, and `.` where a digit
        /// follows it (`42`, `1.5`, `1e5`, `0x1F`; in `1.e5` and `1.` the dot is punctuation).
        case number
        /// A named parameter: `:` and a name that starts like a word and continues with letters,
        /// digits, `_` and non-ASCII bytes (not `$`); a `.` followed by such a name continues it
        /// (`:claims.sub` is one parameter; in `:name.` or `:name.1` the dot is punctuation).
        case parameter
        /// `::`, PostgreSQL's cast.
        case cast
        /// `-- ...` up to (not including) the end of the line, or `/* ... */`, which nests.
        case comment
        /// A run of spaces, tabs, line feeds and carriage returns.
        case whitespace
        /// `(`.
        case openParenthesis
        /// `)`.
        case closeParenthesis
        /// Any other single byte: operators, `,`, `;`, `.`, `[`, `?`, a `:` that starts no
        /// parameter, a `$` that opens no dollar quote.
        case punctuation
    }

    public var kind: Kind
    /// The UTF-8 byte range of the token in the source.
    public var range: Range<Int>

    public init(kind: Kind, range: Range<Int>) {
        self.kind = kind
        self.range = range
    }

    /// Whitespace and comments: what separates code and means nothing to a reader of it.
    public var isTrivia: Bool {
        self.kind == .whitespace || self.kind == .comment
    }

    /// The token as written in `bytes`, the source it was read from.
    public func text(in bytes: [UInt8]) -> String {
        String(decoding: bytes[self.range], as: UTF8.self)
    }

    /// Whether the token is the word `keyword` (given in upper case), whatever the case of its
    /// ASCII letters in `bytes`.
    public func isWord(_ keyword: String, in bytes: [UInt8]) -> Bool {
        guard self.kind == .word, self.range.count == keyword.utf8.count else { return false }
        return zip(bytes[self.range], keyword.utf8).allSatisfy { byte, upper in
            byte == upper || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") && byte - 0x20 == upper)
        }
    }

    /// Whether the token is the punctuation `character` (one ASCII byte).
    public func isPunctuation(_ character: Unicode.Scalar, in bytes: [UInt8]) -> Bool {
        self.kind == .punctuation && bytes[self.range.lowerBound] == UInt8(ascii: character)
    }

    /// The name a word or quoted identifier stands for: the word as written, or the quoted
    /// name with its quotes removed and doubled quotes undone; nil for any other token.
    public func identifier(in bytes: [UInt8]) -> String? {
        switch self.kind {
        case .word:
            return self.text(in: bytes)
        case .quotedIdentifier:
            let quote = bytes[self.range.lowerBound]
            var name: [UInt8] = []
            name.reserveCapacity(self.range.count - 2)
            var index = self.range.lowerBound + 1
            while index < self.range.upperBound - 1 {
                name.append(bytes[index])
                index += bytes[index] == quote ? 2 : 1
            }
            return String(decoding: name, as: UTF8.self)
        default:
            return nil
        }
    }

    /// The name of a parameter token, without its `:`; nil for any other token.
    public func parameterName(in bytes: [UInt8]) -> String? {
        guard self.kind == .parameter else { return nil }
        return String(decoding: bytes[(self.range.lowerBound + 1)..<self.range.upperBound], as: UTF8.self)
    }
}

extension Collection<SQLToken> where Index == Int {
    /// The position of the parenthesis that closes the one at `open` (an index of this
    /// collection), counting the parentheses between; nil when none does.
    public func closingParenthesis(from open: Int) -> Int? {
        var depth = 0
        for index in open..<self.endIndex {
            switch self[index].kind {
            case .openParenthesis: depth += 1
            case .closeParenthesis:
                depth -= 1
                if depth == 0 { return index }
            default: break
            }
        }
        return nil
    }
}

extension ArraySlice<SQLToken> {
    /// The table a write statement names in these tokens (trivia removed), the ones between
    /// `INSERT`/`UPDATE` and its column list or `SET`: `[OR word] [INTO] [ONLY]
    /// [schema.]name [[AS] alias]`. Its last name part, lower-cased; nil when the tokens are
    /// not that.
    public func writtenTable(in bytes: [UInt8]) -> String? {
        var index = self.startIndex
        if index < self.endIndex, self[index].isWord("OR", in: bytes) { index += 2 }
        for keyword in ["INTO", "ONLY"] where index < self.endIndex && self[index].isWord(keyword, in: bytes) {
            index += 1
        }
        var name: String?
        while index < self.endIndex, let part = self[index].identifier(in: bytes) {
            name = part
            index += 1
            guard index < self.endIndex, self[index].isPunctuation(".", in: bytes) else { break }
            index += 1
        }
        // What is left may be an alias only.
        if index < self.endIndex, self[index].isWord("AS", in: bytes) { index += 1 }
        if index < self.endIndex, self[index].identifier(in: bytes) != nil { index += 1 }
        guard index >= self.endIndex else { return nil }
        return name?.lowercased()
    }
}
