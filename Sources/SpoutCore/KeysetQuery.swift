/// The SQL of one page of a query, by keyset: the rows after a key, in key order, up to a limit.
///
/// The query's own text stays as written; the page is a wrapper around it:
///
/// ```sql
/// SELECT * FROM (
/// <the query, without its final ORDER BY>
/// ) AS spout_page
/// WHERE ("lastName", "employeeNumber") > (:spout_after_0, :spout_after_1)   -- after the first page
/// ORDER BY "lastName", "employeeNumber"
/// LIMIT :spout_page_limit
/// ```
///
/// Dropping the query's final `ORDER BY` (the page orders by the key instead) leaves a
/// subquery both databases merge into the outer query, so the key condition reaches the
/// table and an index on the key serves every page alike: page 1,000 costs what page 1 does,
/// unlike `OFFSET`. The key's values are bound as parameters, never written into the text.
///
/// Contract: the key is a list of result column labels whose values are never NULL and, taken
/// together, unique; the query's order, when it has one, should be the key's (then the pages
/// concatenate to the unpaged result). A query with `LIMIT`, `OFFSET` or `FETCH` outside
/// parentheses cannot be paged (the page's own limit would apply after it): ``init(_:key:)``
/// throws.
public struct KeysetQuery: Sendable, Hashable {
    /// The parameter holding the page's row limit.
    public static let limitParameter = "spout_page_limit"

    /// The parameter holding the key's value at `position` in the previous page's last row.
    public static func afterParameter(_ position: Int) -> String { "spout_after_\(position)" }

    /// The SQL of the first page (no key condition).
    public let first: String
    /// The SQL of every later page.
    public let next: String
    /// The key's column labels.
    public let key: [String]

    /// Why a query cannot be paged.
    public struct Unpageable: Error, Sendable, Hashable, CustomStringConvertible {
        public let description: String
    }

    public init(_ sql: String, key: [String]) throws {
        precondition(!key.isEmpty, "a keyset needs at least one column")
        let body = try Self.withoutFinalOrder(sql)
        let columns = key.map(Self.quoted)
        let after = key.indices.map { ":" + Self.afterParameter($0) }
        let condition =
            key.count == 1
            ? "\(columns[0]) > \(after[0])"
            : "(\(columns.joined(separator: ", "))) > (\(after.joined(separator: ", ")))"
        let head = "SELECT * FROM (\n\(body)\n) AS spout_page\n"
        let tail = "ORDER BY \(columns.joined(separator: ", "))\nLIMIT :\(Self.limitParameter)"
        self.first = head + tail
        self.next = head + "WHERE \(condition)\n" + tail
        self.key = key
    }

    /// `label` as a quoted identifier.
    static func quoted(_ label: String) -> String {
        "\"" + label.replacing("\"", with: "\"\"") + "\""
    }

    /// `sql` without its final top-level `ORDER BY` clause and what follows its code (as
    /// ``SQLLexer/codeEnd(of:)``: trailing semicolons, whitespace and comments); throws ``Unpageable`` when a top-level `LIMIT`, `OFFSET` or
    /// `FETCH` is present, or when ``SQLLexer`` cannot read `sql`. Keywords are read from its
    /// tokens, so none is found in a string, comment, quoted identifier or parameter name, and
    /// comments between `ORDER` and `BY` do not hide the clause.
    static func withoutFinalOrder(_ sql: String) throws -> String {
        var lexer = SQLLexer(sql)
        let bytes = lexer.bytes
        var depth = 0
        // The end of the last token that is neither trivia nor `;`, and its value before the
        // final top-level ORDER BY.
        var end = 0
        var endBeforeOrder: Int?
        var previous: (token: SQLToken, endBefore: Int)?
        while let token = try Self.nextToken(of: &lexer) {
            switch token.kind {
            case .whitespace, .comment:
                continue
            case .openParenthesis:
                depth += 1
            case .closeParenthesis:
                depth -= 1
            case .word where depth == 0:
                if token.isWord("LIMIT", in: bytes) || token.isWord("OFFSET", in: bytes) || token.isWord("FETCH", in: bytes) {
                    let word = token.text(in: bytes).uppercased()
                    throw Unpageable(description: "the SQL has a \(word) clause; a paged query cannot (the page sets its own limit)")
                }
                if token.isWord("BY", in: bytes), let previous, previous.token.isWord("ORDER", in: bytes) {
                    endBeforeOrder = previous.endBefore
                }
            default:
                break
            }
            previous = (token, end)
            if !token.isPunctuation(";", in: bytes) { end = token.range.upperBound }
        }
        return String(decoding: bytes[..<(endBeforeOrder ?? end)], as: UTF8.self)
    }

    /// The lexer's next token; what it cannot read makes the query unpageable.
    private static func nextToken(of lexer: inout SQLLexer) throws(Unpageable) -> SQLToken? {
        do {
            return try lexer.next()
        } catch {
            throw Unpageable(description: "the SQL has an \(error.reason)")
        }
    }
}
