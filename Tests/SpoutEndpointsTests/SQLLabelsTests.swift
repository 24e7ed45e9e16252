@testable import SpoutEndpoints
import Testing

/// ``SQLLabels`` on ``SpoutCore/SQLLexer``'s tokens: quoted text of every kind hides commas and
/// keywords, and parameters and casts are expressions like any other.
@Suite struct SQLLabelsTests {
    @Test(arguments: [
        ("SELECT `a:b`, `from` AS c, d FROM t", ["a:b", "c", "d"]),
        ("SELECT :claims.sub AS subject, :p::int AS n, x::text AS y FROM t", ["subject", "n", "y"]),
        ("SELECT 'a, b' AS \"x, y\", $$ FROM $$ AS z, /* , w */ v FROM t", ["x, y", "z", "v"]),
        ("SELECT \"select\", t.`where` FROM t", ["select", "where"]),
    ])
    func labelsOfQuotedText(sql: String, labels: [String]) {
        let result = SQLLabels.labels(of: sql)
        #expect(result.labels == labels)
        #expect(result.complete)
    }

    /// Text the lexer cannot read ends the items; the SQL parser reports the error itself.
    @Test(arguments: ["SELECT a, 'b FROM t", "SELECT a, `b FROM t", "SELECT a, $$b FROM t"])
    func unreadableTextEndsTheLabels(sql: String) {
        let result = SQLLabels.labels(of: sql)
        #expect(result.labels == ["a"])
        #expect(!result.complete)
    }
}
