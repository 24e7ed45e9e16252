/// The table columns a write statement sets from a named parameter, read from its SQL: for an
/// `INSERT INTO t (c1, c2, ...) VALUES (e1, e2, ...)` column `ci` and the expression `ei`, for
/// an `UPDATE t SET c = e, ...` each `c` and its `e`. A column is assigned from a parameter
/// when its expression names exactly one (`:name`, `COALESCE(:species, species)`); an
/// expression naming none or several assigns from none.
///
/// It lets an endpoint tell a caller which argument a unique or NOT NULL violation is about
/// (the database names a table and a column, the caller knows parameters). Only the first write
/// keyword at the statement's top level is read (after a `WITH` clause's parentheses);
/// `INSERT ... SELECT`, a `VALUES` list of several rows, `SET (a, b) = (...)` and anything this
/// reading does not follow assign nothing, so nothing is named rather than a wrong parameter.
public struct AssignedColumns: Sendable, Hashable {
    /// Parameter names by column name, lower-cased (PostgreSQL folds unquoted names to lower
    /// case and SQLite compares them without case).
    private var parameters: [String: String]
    /// The table written, without its schema, lower-cased; nil when nothing is assigned.
    public private(set) var table: String?

    /// Reads `source` (SQL with `:name` parameters); a statement the lexer cannot read assigns
    /// nothing.
    public init(sql source: String) {
        self.parameters = [:]
        let lexer = SQLLexer(source)
        guard let all = try? SQLLexer.tokens(of: source) else { return }
        let bytes = lexer.bytes
        let tokens = all.filter { !$0.isTrivia }
        var depth = 0
        for (position, token) in tokens.enumerated() {
            switch token.kind {
            case .openParenthesis: depth += 1
            case .closeParenthesis: depth -= 1
            default:
                guard depth == 0 else { continue }
                if token.isWord("INSERT", in: bytes) {
                    self.readInsert(tokens[(position + 1)...], bytes)
                    return
                }
                if token.isWord("UPDATE", in: bytes) {
                    self.readUpdate(tokens[(position + 1)...], bytes)
                    return
                }
            }
        }
    }

    /// The parameter `column` of `table` (nil: the table written) is assigned from, if any;
    /// names are compared without case, and a table without its schema.
    public func parameter(forColumn column: String, of table: String? = nil) -> String? {
        if let table, table.lowercased() != self.table { return nil }
        return self.parameters[column.lowercased()]
    }

    /// The columns of the written table assigned from a parameter, lower-cased.
    public var columns: [String] { Array(self.parameters.keys) }

    /// Whether the statement assigns any column from a parameter.
    public var isEmpty: Bool { self.parameters.isEmpty }

    // MARK: Reading

    private mutating func readInsert(_ tokens: ArraySlice<SQLToken>, _ bytes: [UInt8]) {
        // INSERT [OR ...] INTO name [AS alias] ( columns ) VALUES ( expressions )
        guard let open = tokens.firstIndex(where: { $0.kind == .openParenthesis }),
            let columnList = Self.parenthesized(tokens, from: open)
        else { return }
        let values = columnList.upperBound + 1
        guard values + 1 < tokens.endIndex, tokens[values].isWord("VALUES", in: bytes), tokens[values + 1].kind == .openParenthesis,
            let valueList = Self.parenthesized(tokens, from: values + 1)
        else { return }
        // One row only: another row's values would be another parameter's.
        guard valueList.upperBound + 1 == tokens.endIndex || !tokens[valueList.upperBound + 1].isPunctuation(",", in: bytes) else { return }
        guard let table = tokens[tokens.startIndex..<open].writtenTable(in: bytes) else { return }
        let columns = Self.split(tokens[(open + 1)..<columnList.upperBound], bytes)
        let expressions = Self.split(tokens[(values + 2)..<valueList.upperBound], bytes)
        guard columns.count == expressions.count else { return }
        for (column, expression) in zip(columns, expressions) {
            guard column.count == 1, let name = column.first?.identifier(in: bytes) else { continue }
            self.assign(name, from: expression, bytes)
        }
        if !self.parameters.isEmpty { self.table = table }
    }

    private mutating func readUpdate(_ tokens: ArraySlice<SQLToken>, _ bytes: [UInt8]) {
        // UPDATE [OR ...] [ONLY] name [AS alias] SET column = expression, ... [FROM | WHERE | RETURNING ...]
        guard let set = tokens.firstIndex(where: { $0.isWord("SET", in: bytes) }),
            let table = tokens[tokens.startIndex..<set].writtenTable(in: bytes)
        else { return }
        var end = tokens.index(after: set)
        var depth = 0
        while end < tokens.endIndex {
            let token = tokens[end]
            if token.kind == .openParenthesis { depth += 1 }
            if token.kind == .closeParenthesis { depth -= 1 }
            if depth == 0 && (["FROM", "WHERE", "RETURNING"].contains { token.isWord($0, in: bytes) } || token.isPunctuation(";", in: bytes)) {
                break
            }
            end += 1
        }
        for assignment in Self.split(tokens[tokens.index(after: set)..<end], bytes) {
            guard assignment.count >= 3, assignment[assignment.startIndex + 1].isPunctuation("=", in: bytes),
                let name = assignment.first?.identifier(in: bytes)
            else { continue }
            self.assign(name, from: assignment.dropFirst(2), bytes)
        }
        if !self.parameters.isEmpty { self.table = table }
    }

    private mutating func assign(_ column: String, from expression: ArraySlice<SQLToken>, _ bytes: [UInt8]) {
        let names = Set(expression.compactMap { $0.parameterName(in: bytes) })
        guard names.count == 1, let name = names.first else { return }
        self.parameters[column.lowercased()] = name
    }

    /// `open..<close`, where `close` is the position of the parenthesis that closes the one at
    /// `open`; nil when none does.
    private static func parenthesized(_ tokens: ArraySlice<SQLToken>, from open: Int) -> Range<Int>? {
        tokens.closingParenthesis(from: open).map { open..<$0 }
    }

    /// `tokens` cut at the commas outside parentheses.
    private static func split(_ tokens: ArraySlice<SQLToken>, _ bytes: [UInt8]) -> [ArraySlice<SQLToken>] {
        var parts: [ArraySlice<SQLToken>] = []
        var start = tokens.startIndex
        var depth = 0
        for index in tokens.indices {
            let token = tokens[index]
            if token.kind == .openParenthesis { depth += 1 }
            if token.kind == .closeParenthesis { depth -= 1 }
            if depth == 0 && token.isPunctuation(",", in: bytes) {
                parts.append(tokens[start..<index])
                start = index + 1
            }
        }
        parts.append(tokens[start..<tokens.endIndex])
        return parts
    }
}
