/// The CHECK constraints of a table as its `CREATE TABLE` text declares them, for SQLite, whose
/// check violation reports a constraint by its name or its expression as written, and names
/// neither its table nor its columns.
public enum CheckConstraints {
    /// The columns of the CHECK `reported` (SQLite's report: the constraint's name, or its
    /// expression as written) among `columns` (the table's), in the order of `columns`: the
    /// names its expression uses, compared without case. Nil when `createTable` (the table's
    /// SQL, `sqlite_schema.sql`) declares no such CHECK or cannot be read.
    public static func columns(ofCheck reported: String, createTable: String, columns: [String]) -> [String]? {
        guard let all = try? SQLLexer.tokens(of: createTable) else { return nil }
        let bytes = Array(createTable.utf8)
        let tokens = all.filter { !$0.isTrivia }
        let wanted = Self.trimmed(reported)
        for (position, token) in tokens.enumerated() where token.isWord("CHECK", in: bytes) {
            let open = position + 1
            guard open < tokens.count, tokens[open].kind == .openParenthesis, let close = tokens.closingParenthesis(from: open) else {
                continue
            }
            let named = position >= 2 && tokens[position - 2].isWord("CONSTRAINT", in: bytes) ? tokens[position - 1].identifier(in: bytes) : nil
            let expression = String(decoding: bytes[tokens[open].range.upperBound..<tokens[close].range.lowerBound], as: UTF8.self)
            guard named == wanted || Self.trimmed(expression) == wanted else { continue }
            let used = Set(tokens[(open + 1)..<close].compactMap { $0.identifier(in: bytes)?.lowercased() })
            return columns.filter { used.contains($0.lowercased()) }
        }
        return nil
    }

    /// `text` without the white space around it.
    private static func trimmed(_ text: String) -> String {
        String(text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
