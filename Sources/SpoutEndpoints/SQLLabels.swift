import SpoutCore

/// Finds the column labels of a statement without running it, from its outermost select list
/// (or `RETURNING` list).
///
/// The rule, which endpoint validation and the documentation rely on: an item `expr AS label`,
/// `expr AS "label"` or `expr label` has that label; an item that is a bare or qualified column
/// (`title`, `t.title`) has the column's name; any other item (an expression without a label,
/// `*`, `t.*`) has a label only the database knows, and makes the result incomplete.
/// Comments, string literals, quoted identifiers and dollar quotes are skipped; only the first
/// select list at parenthesis depth 0 counts (for `WITH`, the main query's; for `UNION`, the
/// first branch's, which names the columns).
enum SQLLabels {
    struct Result: Hashable {
        var labels: [String]
        /// False when some item's label cannot be known statically.
        var complete: Bool
    }

    enum Token: Hashable {
        case word(String)
        case quoted(String)
        case punctuation(String)
        case other
    }

    static func labels(of sql: String) -> Result {
        let tokens = self.tokens(of: sql)
        var depth = 0
        var start: Int?
        for (index, token) in tokens.enumerated() {
            switch token {
            case .punctuation("("): depth += 1
            case .punctuation(")"): depth -= 1
            case .word(let word) where depth == 0:
                let upper = word.uppercased()
                if upper == "SELECT" || upper == "RETURNING" { start = index + 1 }
            default: break
            }
            if start != nil { break }
        }
        guard var index = start else { return Result(labels: [], complete: false) }
        // DISTINCT, DISTINCT ON (...), ALL
        if index < tokens.count, case .word(let word) = tokens[index], ["DISTINCT", "ALL"].contains(word.uppercased()) {
            index += 1
            if index < tokens.count, case .word(let on) = tokens[index], on.uppercased() == "ON" {
                index += 1
                index = self.skipParenthesized(tokens, from: index)
            }
        }
        let stopWords: Set<String> = [
            "FROM", "WHERE", "GROUP", "ORDER", "LIMIT", "UNION", "INTERSECT", "EXCEPT", "HAVING", "WINDOW",
            "OFFSET", "FETCH", "FOR", "INTO",
        ]
        var items: [[Token]] = [[]]
        depth = 0
        while index < tokens.count {
            let token = tokens[index]
            if depth == 0 {
                if case .word(let word) = token, stopWords.contains(word.uppercased()) { break }
                if token == .punctuation(";") { break }
                if token == .punctuation(",") {
                    items.append([])
                    index += 1
                    continue
                }
            }
            if token == .punctuation("(") { depth += 1 }
            if token == .punctuation(")") { depth -= 1 }
            items[items.count - 1].append(token)
            index += 1
        }
        var result = Result(labels: [], complete: true)
        for item in items {
            if let label = self.label(of: item) {
                result.labels.append(label)
            } else {
                result.complete = false
            }
        }
        return result
    }

    private static func label(of item: [Token]) -> String? {
        guard let last = item.last else { return nil }
        let name: String
        switch last {
        case .word(let word): name = word
        case .quoted(let quoted): name = quoted
        default: return nil
        }
        if item.count == 1 { return name }
        let before = item[item.count - 2]
        if case .word(let word) = before, word.uppercased() == "AS" { return name }
        // A qualified column: t.title
        if before == .punctuation(".") {
            let isColumnPath = item.enumerated().allSatisfy { offset, token in
                offset % 2 == 1 ? token == .punctuation(".") : self.isName(token)
            }
            return isColumnPath ? name : nil
        }
        // An implicit alias: `expr label` after a closing parenthesis, a name or a literal.
        switch before {
        case .punctuation(")"), .word, .quoted, .other:
            if case .word(let word) = last, ["END", "NULL", "TRUE", "FALSE"].contains(word.uppercased()) { return nil }
            return name
        default:
            return nil
        }
    }

    private static func isName(_ token: Token) -> Bool {
        switch token {
        case .word, .quoted: return true
        case .punctuation, .other: return false
        }
    }

    private static func skipParenthesized(_ tokens: [Token], from start: Int) -> Int {
        guard start < tokens.count, tokens[start] == .punctuation("(") else { return start }
        var depth = 0
        var index = start
        while index < tokens.count {
            if tokens[index] == .punctuation("(") { depth += 1 }
            if tokens[index] == .punctuation(")") {
                depth -= 1
                if depth == 0 { return index + 1 }
            }
            index += 1
        }
        return index
    }

    /// Splits SQL into words, quoted identifiers and punctuation; literals, parameters and
    /// numbers become ``Token/other``; comments and spaces are dropped. Strings, quoted
    /// identifiers, comments and dollar quotes are found by ``SQLLexer/quotedRun(in:at:)``,
    /// the scanner the SQL parser uses; an unterminated one ends the tokens (the parser
    /// reports it).
    static func tokens(of sql: String) -> [Token] {
        let bytes = Array(sql.utf8)
        var tokens: [Token] = []
        var index = 0
        func isWordByte(_ byte: UInt8) -> Bool {
            (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
                || byte == 0x5F || byte == 0x24 || byte >= 0x80
        }
        while index < bytes.count {
            let run: (run: SQLLexer.QuotedRun, end: Int)?
            do {
                run = try SQLLexer.quotedRun(in: bytes, at: index)
            } catch {
                return tokens
            }
            if let run {
                switch run.run {
                case .identifier(let name): tokens.append(.quoted(name))
                case .string, .dollarQuoted: tokens.append(.other)
                case .comment: break
                }
                index = run.end
                continue
            }
            let byte = bytes[index]
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0D:
                index += 1
            case UInt8(ascii: "`"):
                // SQLite also quotes identifiers MySQL's way.
                var name: [UInt8] = []
                index += 1
                while index < bytes.count {
                    if bytes[index] == UInt8(ascii: "`") {
                        if index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "`") {
                            name.append(UInt8(ascii: "`"))
                            index += 2
                            continue
                        }
                        break
                    }
                    name.append(bytes[index])
                    index += 1
                }
                index += 1
                tokens.append(.quoted(String(decoding: name, as: UTF8.self)))
            case UInt8(ascii: ":") where index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: ":"):
                tokens.append(.punctuation("::"))
                index += 2
            case UInt8(ascii: ":") where index + 1 < bytes.count && isWordByte(bytes[index + 1]):
                index += 1
                while index < bytes.count && isWordByte(bytes[index]) { index += 1 }
                tokens.append(.other)
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                while index < bytes.count && (isWordByte(bytes[index]) || bytes[index] == UInt8(ascii: ".")) { index += 1 }
                tokens.append(.other)
            default:
                if isWordByte(byte) {
                    let start = index
                    while index < bytes.count && isWordByte(bytes[index]) { index += 1 }
                    tokens.append(.word(String(decoding: bytes[start..<index], as: UTF8.self)))
                } else {
                    tokens.append(.punctuation(String(UnicodeScalar(byte))))
                    index += 1
                }
            }
        }
        return tokens
    }
}
