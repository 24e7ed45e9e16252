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

    /// `sql` without its final top-level `ORDER BY` clause and trailing semicolons; throws
    /// ``Unpageable`` when a top-level `LIMIT`, `OFFSET` or `FETCH` is present.
    static func withoutFinalOrder(_ sql: String) throws -> String {
        let bytes = Array(sql.utf8)
        var depth = 0
        var index = 0
        var orderStart: Int?
        var previousWord: (text: String, start: Int)?
        while index < bytes.count {
            let run: (run: SQLLexer.QuotedRun, end: Int)?
            do {
                run = try SQLLexer.quotedRun(in: bytes, at: index)
            } catch {
                throw Unpageable(description: "the SQL has an unterminated \(error.what)")
            }
            if let run {
                index = run.end
                previousWord = nil
                continue
            }
            let byte = bytes[index]
            if byte == UInt8(ascii: "(") {
                depth += 1
            } else if byte == UInt8(ascii: ")") {
                depth -= 1
            } else if SQLLexer.isIdentifierStart(byte) {
                var end = index + 1
                while end < bytes.count && SQLLexer.isIdentifierByte(bytes[end]) { end += 1 }
                // A parameter (`:limit`) is not a keyword.
                let isParameter = index > 0 && bytes[index - 1] == UInt8(ascii: ":")
                let word = String(decoding: bytes[index..<end], as: UTF8.self).uppercased()
                if depth == 0 && !isParameter {
                    if ["LIMIT", "OFFSET", "FETCH"].contains(word) {
                        throw Unpageable(description: "the SQL has a \(word) clause; a paged query cannot (the page sets its own limit)")
                    }
                    if word == "BY", let previous = previousWord, previous.text == "ORDER" { orderStart = previous.start }
                    previousWord = (word, index)
                } else {
                    previousWord = nil
                }
                index = end
                continue
            } else if byte != UInt8(ascii: " ") && byte != UInt8(ascii: "\t") && byte != UInt8(ascii: "\n") && byte != UInt8(ascii: "\r") {
                previousWord = nil
            }
            index += 1
        }
        var end = orderStart ?? bytes.count
        while end > 0, [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: ";")].contains(bytes[end - 1]) {
            end -= 1
        }
        return String(decoding: bytes[..<end], as: UTF8.self)
    }
}
