/// The tokens of SQL text that ``OptionalClauses`` reads: words, `:name` parameters,
/// parentheses, `::` and any other byte; whitespace, comments, strings and quoted identifiers
/// are skipped with ``SQLLexer/quotedRun(in:at:)``, so they agree with ``SQLLexer`` on where
/// code is.
struct OptionalClauseTokens {
    enum Kind: Hashable {
        /// A keyword or identifier, upper-cased.
        case word(String)
        case parameter(String)
        case open
        case close
        case doubleColon
        /// A string, quoted identifier or any other character.
        case other
    }

    struct Token {
        var kind: Kind
        /// The token's UTF-8 byte range in the source.
        var range: Range<Int>
    }

    /// `(:p IS NULL OR` found by ``nullTest(at:)``: the parameter and the index of `OR`.
    struct NullTest {
        var parameter: String
        var orIndex: Int
    }

    private(set) var items: [Token] = []
    /// The index of the `)` that closes each `(` (by token index); none when unbalanced.
    private(set) var matchingClose: [Int: Int] = [:]

    init(_ bytes: [UInt8]) throws(OptionalClauseError) {
        var index = 0
        var open: [Int] = []
        while index < bytes.count {
            let run: (run: SQLLexer.QuotedRun, end: Int)?
            do {
                run = try SQLLexer.quotedRun(in: bytes, at: index)
            } catch {
                throw OptionalClauseError(bytes: bytes, offset: error.offset, reason: "unterminated \(error.what)")
            }
            if let run {
                if run.run != .comment { self.items.append(Token(kind: .other, range: index..<run.end)) }
                index = run.end
                continue
            }
            let byte = bytes[index]
            if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") {
                index += 1
                continue
            }
            if byte == UInt8(ascii: ":") {
                if index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: ":") {
                    self.items.append(Token(kind: .doubleColon, range: index..<(index + 2)))
                    index += 2
                    continue
                }
                var end = index + 1
                while end < bytes.count && SQLLexer.isIdentifierByte(bytes[end]) && bytes[end] != UInt8(ascii: "$") { end += 1 }
                let name = String(decoding: bytes[(index + 1)..<end], as: UTF8.self)
                self.items.append(Token(kind: name.isEmpty ? .other : .parameter(name), range: index..<max(end, index + 1)))
                index = max(end, index + 1)
                continue
            }
            if SQLLexer.isIdentifierStart(byte) {
                var end = index + 1
                while end < bytes.count && SQLLexer.isIdentifierByte(bytes[end]) { end += 1 }
                self.items.append(Token(kind: .word(String(decoding: bytes[index..<end], as: UTF8.self).uppercased()), range: index..<end))
                index = end
                continue
            }
            switch byte {
            case UInt8(ascii: "("):
                open.append(self.items.count)
                self.items.append(Token(kind: .open, range: index..<(index + 1)))
            case UInt8(ascii: ")"):
                if let opening = open.popLast() { self.matchingClose[opening] = self.items.count }
                self.items.append(Token(kind: .close, range: index..<(index + 1)))
            default:
                self.items.append(Token(kind: .other, range: index..<(index + 1)))
            }
            index += 1
        }
    }

    /// The test `PARAMETER IS NULL OR` starting at token `index`, where PARAMETER is `:p`,
    /// `:p::type` or `CAST(:p AS type)`; nil when the tokens there are anything else.
    func nullTest(at index: Int) -> NullTest? {
        guard index < self.items.count else { return nil }
        let parameter: String
        var next: Int
        switch self.items[index].kind {
        case .parameter(let name):
            parameter = name
            next = index + 1
            if self.kind(at: next) == .doubleColon, case .word? = self.kind(at: next + 1) { next += 2 }
        case .word("CAST"):
            guard self.kind(at: index + 1) == .open, case .parameter(let name)? = self.kind(at: index + 2),
                self.kind(at: index + 3) == .word("AS"), let close = self.matchingClose[index + 1]
            else { return nil }
            parameter = name
            next = close + 1
        default:
            return nil
        }
        guard self.kind(at: next) == .word("IS"), self.kind(at: next + 1) == .word("NULL"), self.kind(at: next + 2) == .word("OR")
        else { return nil }
        return NullTest(parameter: parameter, orIndex: next + 2)
    }

    private func kind(at index: Int) -> Kind? {
        index < self.items.count ? self.items[index].kind : nil
    }
}
