import SpoutCore

/// `IN (:ids)` with a list parameter, which endpoint files refuse: a list is bound as one value
/// (SQLite: JSON array text, for `json_each`; PostgreSQL: an array), so `IN` compares each row
/// with the whole list. SQLite then finds nothing and answers `[]`; PostgreSQL cannot read the
/// array as one of the column's values and refuses the request. Each database has its own way
/// to test membership, named in the message.
enum ListInClause {
    /// Whether the parameter at `segments[index]` is alone in the parentheses of an `IN`
    /// (`IN (:ids)`, `NOT IN ( :ids )`, any case).
    static func isAlone(in segments: [ParsedSQL.Segment], at index: Int) -> Bool {
        guard index > 0, index + 1 < segments.count,
            case .sql(let before) = segments[index - 1], case .sql(let after) = segments[index + 1]
        else { return false }
        guard after.drop(while: \.isWhitespace).first == ")" else { return false }
        var head = before.reversed().drop(while: \.isWhitespace)
        guard head.first == "(" else { return false }
        head = head.dropFirst().drop(while: \.isWhitespace)
        let word = head.prefix(while: { $0.isLetter || $0.isNumber || $0 == "_" })
        return String(word.reversed()).lowercased() == "in"
    }

    /// What to write instead, on each database.
    static func message(parameter name: String) -> String {
        "parameter :\(name) is a list, which is bound as one value: IN (:\(name)) compares each row with the whole list "
            + "(SQLite answers nothing, PostgreSQL refuses the request). Test membership the database's way: "
            + "= ANY(:\(name)) on PostgreSQL, IN (SELECT value FROM json_each(:\(name))) on SQLite; for both, keep one in "
            + "the SQL file and the other in its override under sql/postgres/ or sql/sqlite/ (docs/endpoints.md, List parameters)"
    }
}
