import SpoutCore

/// An `INSERT` statement rewritten to run once over many records held in a table
/// (``PostgresSetWrite``): `INSERT INTO t (c1, …, cn) <query>`, where `<query>` is a `SELECT`
/// or a `VALUES` list, becomes a statement that runs `<query>` once per record of the table
/// (a `LATERAL` subquery), with each parameter replaced by the record's column for it (cast to
/// the parameter's type), and inserts what all of them produce in record order.
///
/// Contract: a statement is rewritten only when the rewrite changes nothing a caller sees but
/// the number of statements; otherwise ``init(_:)`` returns nil and the records run one by
/// one. So it declines:
/// - anything but `INSERT INTO target (columns) SELECT …` or `… VALUES …` as the whole
///   statement (a `WITH` before it, `DEFAULT VALUES`, `OVERRIDING`, no column list);
/// - `ON CONFLICT` and `RETURNING`: rows skipped by a conflict, or returned, belong to a record
///   the set statement cannot name;
/// - a query that names the target table: records run one by one see the rows the ones before
///   them inserted, one statement over all of them does not.
///
/// The rewritten statement (``statement(records:types:)``) takes the first and last record
/// numbers of a range (`:spout_first`, `:spout_last`) and answers one row: the rows inserted,
/// the rows the queries produced, and the records that produced at least one. A record whose
/// query produced no row changed nothing; rows produced and not inserted were dropped by a
/// trigger.
struct PostgresSetInsert: Sendable, Hashable {
    /// `INSERT INTO target (columns)` as written, up to the column list's closing parenthesis.
    let head: String
    /// The number of columns inserted.
    let columnCount: Int
    /// The query: verbatim SQL, and the placeholder number (from 1) of each parameter.
    let query: [Piece]

    enum Piece: Sendable, Hashable {
        case sql(String)
        case parameter(Int)
    }

    /// The record table's column for placeholder `number` (from 1).
    static func parameterColumn(_ number: Int) -> String { "spout_p\(number)" }

    /// The query, each parameter replaced by its record's column cast to `types[number - 1]`,
    /// the type PostgreSQL infers for the parameter: `(spout_r.spout_p1::date)`. The columns
    /// hold text, so a value the type refuses fails in the statement, where its record can be
    /// found, not in the copy.
    func query(types: [String]) -> String {
        self.query.map { piece in
            switch piece {
            case .sql(let text): text
            case .parameter(let number): "(spout_r.\(Self.parameterColumn(number))::\(types[number - 1]))"
            }
        }.joined()
    }

    /// Reads `statement`; nil when it is not an insert this type rewrites (see the contract).
    init?(_ statement: ParsedSQL) {
        guard let all = try? SQLLexer.tokens(of: statement.source) else { return nil }
        let bytes = Array(statement.source.utf8)
        var tokens = all.filter { !$0.isTrivia }
        while let last = tokens.last, last.isPunctuation(";", in: bytes) { tokens.removeLast() }
        guard tokens.count > 4, tokens[0].isWord("INSERT", in: bytes), tokens[1].isWord("INTO", in: bytes),
            let open = tokens.firstIndex(where: { $0.kind == .openParenthesis }),
            let close = tokens.closingParenthesis(from: open), close + 1 < tokens.count
        else { return nil }
        // The target: [schema.]name [[AS] alias], nothing else.
        guard let table = tokens[2..<open].writtenTable(in: bytes) else { return nil }
        // The columns: names separated by commas.
        let columns = tokens[(open + 1)..<close]
        guard !columns.isEmpty else { return nil }
        for (offset, token) in columns.enumerated() {
            let isName = offset % 2 == 0
            guard isName ? token.identifier(in: bytes) != nil : token.isPunctuation(",", in: bytes) else { return nil }
        }
        guard columns.count % 2 == 1 else { return nil }
        let queryStart = close + 1
        guard tokens[queryStart].isWord("SELECT", in: bytes) || tokens[queryStart].isWord("VALUES", in: bytes) else { return nil }
        var depth = 0
        for index in queryStart..<tokens.count {
            let token = tokens[index]
            switch token.kind {
            case .openParenthesis: depth += 1
            case .closeParenthesis: depth -= 1
            default:
                if token.identifier(in: bytes)?.lowercased() == table { return nil }
                if token.isPunctuation(";", in: bytes) { return nil }
                guard depth == 0 else { continue }
                if token.isWord("RETURNING", in: bytes) { return nil }
                if token.isWord("ON", in: bytes), index + 1 < tokens.count, tokens[index + 1].isWord("CONFLICT", in: bytes) { return nil }
            }
        }
        var query: [Piece] = []
        var copied = tokens[queryStart].range.lowerBound
        let end = tokens[tokens.count - 1].range.upperBound
        for token in all where token.range.lowerBound >= copied && token.range.upperBound <= end && token.kind == .parameter {
            guard let name = token.parameterName(in: bytes), let number = statement.parameterNames.firstIndex(of: name) else { return nil }
            if copied < token.range.lowerBound { query.append(.sql(String(decoding: bytes[copied..<token.range.lowerBound], as: UTF8.self))) }
            query.append(.parameter(number + 1))
            copied = token.range.upperBound
        }
        if copied < end { query.append(.sql(String(decoding: bytes[copied..<end], as: UTF8.self))) }
        self.head = String(decoding: bytes[tokens[0].range.lowerBound..<tokens[close].range.upperBound], as: UTF8.self)
        self.columnCount = (columns.count + 1) / 2
        self.query = query
    }

    /// The statement over the records numbered `:spout_first` to `:spout_last` of `records` (a
    /// table with `spout_ord` and the parameter columns, as text), `types` the parameters'
    /// types.
    func statement(records: String, types: [String]) -> String {
        let outputs = (1...self.columnCount).map { "spout_c\($0)" }.joined(separator: ", ")
        // The query ends on a line of its own: a comment at its end ends there.
        return """
            WITH spout_s AS MATERIALIZED (
            SELECT spout_r.spout_ord, spout_q.* FROM \(records) AS spout_r CROSS JOIN LATERAL (
            \(self.query(types: types))
            ) AS spout_q (\(outputs)) WHERE spout_r.spout_ord BETWEEN :spout_first AND :spout_last),
            spout_i AS (\(self.head) SELECT \(outputs) FROM spout_s ORDER BY spout_ord RETURNING 1)
            SELECT (SELECT count(*) FROM spout_i), (SELECT count(*) FROM spout_s), (SELECT count(DISTINCT spout_ord) FROM spout_s)
            """
    }
}
