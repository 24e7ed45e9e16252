import SpoutCore

/// Finds the column labels of a statement without running it, from its outermost select list
/// (or `RETURNING` list).
///
/// The rule, which endpoint validation and the documentation rely on: an item `expr AS label`,
/// `expr AS "label"` or `expr label` has that label; an item that is a bare or qualified column
/// (`title`, `t.title`) has the column's name; any other item (an expression without a label,
/// `*`, `t.*`) has a label only the database knows, and makes the result incomplete.
/// The SQL is read as ``SpoutCore/SQLLexer``'s tokens, so comments, strings, quoted
/// identifiers and dollar quotes hide no select list and no comma; only the first
/// select list at parenthesis depth 0 counts (for `WITH`, the main query's; for `UNION`, the
/// first branch's, which names the columns).
enum SQLLabels {
    struct Result: Hashable {
        var labels: [String]
        /// False when some item's label cannot be known statically.
        var complete: Bool
        /// False when the SQL has no top-level `SELECT` or `RETURNING` list at all (a
        /// misspelled `SELEC`): then it has no labels to know.
        var found = true
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
        guard var index = start else { return Result(labels: [], complete: false, found: false) }
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

    /// ``SpoutCore/SQLLexer``'s tokens of `sql` as the label rules see them: words, quoted
    /// identifiers (their names) and punctuation (`::` is one); strings, dollar quotes,
    /// numbers and parameters become ``Token/other``; comments and whitespace are dropped.
    /// Text the lexer cannot read ends the tokens (the SQL parser reports it).
    static func tokens(of sql: String) -> [Token] {
        var lexer = SQLLexer(sql)
        let bytes = lexer.bytes
        var tokens: [Token] = []
        while let token = try? lexer.next() {
            switch token.kind {
            case .word, .quotedIdentifier:
                if let name = token.identifier(in: bytes) { tokens.append(token.kind == .word ? .word(name) : .quoted(name)) }
            case .string, .dollarQuotedString, .number, .parameter:
                tokens.append(.other)
            case .cast, .openParenthesis, .closeParenthesis, .punctuation:
                tokens.append(.punctuation(token.text(in: bytes)))
            case .comment, .whitespace:
                break
            }
        }
        return tokens
    }
}
