import SpoutCore
import Testing

@Suite struct SQLLexerTests {
    private func postgres(_ sql: String) throws -> ParsedSQL { try ParsedSQL(sql, dialect: .postgres) }
    private func sqlite(_ sql: String) throws -> ParsedSQL { try ParsedSQL(sql, dialect: .sqlite) }

    @Test func replacesNamesWithNumberedPlaceholders() throws {
        let sql = "SELECT * FROM t WHERE a = :first AND b = :second OR a = :first"
        #expect(try self.postgres(sql).text == "SELECT * FROM t WHERE a = $1 AND b = $2 OR a = $1")
        #expect(try self.sqlite(sql).text == "SELECT * FROM t WHERE a = ?1 AND b = ?2 OR a = ?1")
        #expect(try self.postgres(sql).parameterNames == ["first", "second"])
    }

    @Test func dottedNamesAreOneParameter() throws {
        let parsed = try self.postgres("SELECT :claims.sub, :claims.address.city::text, :claims.sub FROM t WHERE o = :owner")
        #expect(parsed.parameterNames == ["claims.sub", "claims.address.city", "owner"])
        #expect(parsed.text == "SELECT $1, $2::text, $1 FROM t WHERE o = $3")
    }

    @Test(arguments: [
        // A dot not followed by a name start is SQL: the name ends before it.
        ("SELECT :a. FROM t", ["a"], "SELECT $1. FROM t"),
        ("SELECT :a.1 FROM t", ["a"], "SELECT $1.1 FROM t"),
        ("SELECT :a.* FROM t", ["a"], "SELECT $1.* FROM t"),
        ("SELECT :a..b FROM t", ["a"], "SELECT $1..b FROM t"),
        ("SELECT ':claims.sub', \":claims.x\" -- :claims.y\n", [], "SELECT ':claims.sub', \":claims.x\" -- :claims.y\n"),
    ])
    func dotsThatEndAName(sql: String, names: [String], text: String) throws {
        let parsed = try self.sqlite(sql)
        #expect(parsed.parameterNames == names)
        #expect(parsed.text == text.replacing("$", with: "?"))
    }

    @Test func castAfterParameterStaysACast() throws {
        let parsed = try self.postgres("SELECT :employeeNumber::int, x::text FROM t")
        #expect(parsed.text == "SELECT $1::int, x::text FROM t")
        #expect(parsed.parameterNames == ["employeeNumber"])
    }

    @Test(arguments: [
        "SELECT ':notAParameter', 'it''s :no'",
        "SELECT E'\\' :no', e'a\\\\' || 'b'",
        "SELECT \"col:no\", \"say \"\":no\"\"\" FROM t",
        "SELECT $$ :no $$, $tag$ :no $ $notag$ $tag$",
        "SELECT 1 -- :no\n",
        "SELECT /* :no /* nested :no */ still :no */ 1",
        "SELECT x::int, y :: text",
    ])
    func leavesQuotedTextAlone(sql: String) throws {
        let parsed = try self.postgres(sql)
        #expect(parsed.parameterNames.isEmpty)
        #expect(parsed.text == sql)
    }

    @Test func parametersAroundQuotedTextAreFound() throws {
        let parsed = try self.postgres("SELECT 'x', :a, $q$ :b $q$, E'\\'', :c -- :d\n, :e /* :f */")
        #expect(parsed.parameterNames == ["a", "c", "e"])
        #expect(parsed.text == "SELECT 'x', $1, $q$ :b $q$, E'\\'', $2 -- :d\n, $3 /* :f */")
    }

    @Test func standardStringsDoNotUseBackslashEscapes() throws {
        // In a standard string a backslash is literal, so the string ends at the second quote.
        let parsed = try self.postgres("SELECT 'a\\', :p")
        #expect(parsed.parameterNames == ["p"])
    }

    @Test func positionalPlaceholdersAreNotDollarQuotes() throws {
        let parsed = try self.postgres("SELECT $1, :a, $2")
        #expect(parsed.parameterNames == ["a"])
        #expect(parsed.text == "SELECT $1, $1, $2")
    }

    @Test func namesStopAtNonIdentifierCharacters() throws {
        let parsed = try self.postgres("SELECT :a_1,:b2)")
        #expect(parsed.parameterNames == ["a_1", "b2"])
    }

    @Test(arguments: [
        ("SELECT : x", 7, "parameter without a name"),
        ("SELECT a:", 8, "parameter without a name"),
        ("SELECT :1", 7, "parameter without a name"),
        ("SELECT 'abc", 7, "unterminated string"),
        ("SELECT E'ab\\'", 8, "unterminated string"),
        ("SELECT \"abc", 7, "unterminated quoted identifier"),
        ("SELECT /* a /* b */", 7, "unterminated comment"),
        ("SELECT $x$ abc $y$", 7, "unterminated dollar quote"),
    ])
    func errorsCarryTheOffset(sql: String, offset: Int, reason: String) throws {
        let error = try #require(throws: SQLSyntaxError.self) { try ParsedSQL(sql, dialect: .postgres) }
        #expect(error.offset == offset)
        #expect(error.reason == reason)
        #expect(error.line == 1)
        #expect(error.column == offset + 1)
    }

    @Test func errorLineAndColumnCountNewlines() throws {
        let error = try #require(throws: SQLSyntaxError.self) { try ParsedSQL("SELECT 1,\n  'open", dialect: .sqlite) }
        #expect(error.offset == 12)
        #expect(error.line == 2)
        #expect(error.column == 3)
    }

    @Test func cachedParsesAreReused() throws {
        let first = try ParsedSQL.cached("SELECT :a", dialect: .postgres)
        let second = try ParsedSQL.cached("SELECT :a", dialect: .postgres)
        let other = try ParsedSQL.cached("SELECT :a", dialect: .sqlite)
        #expect(first == second)
        #expect(other.text == "SELECT ?1")
    }

    @Test func bindingNamesAMissingParameter() throws {
        let parsed = try self.postgres("SELECT :a, :b")
        #expect(try parsed.bind(["a": 1, "b": "x"]) == [.integer(1), .text("x")])
        let error = try #require(throws: MissingParameterError.self) { try parsed.bind(["a": 1]) }
        #expect(error.name == "b")
    }

    @Test func quotedRunsAreFoundWhereTheyStart() throws {
        let bytes = Array(#"a E'x\'y' "q""t" /* a /* b */ c */ $t$ : $t$ -- end"#.utf8)
        func run(at offset: Int) throws -> (SQLLexer.QuotedRun, String)? {
            try SQLLexer.quotedRun(in: bytes, at: offset).map { ($0.run, String(decoding: bytes[offset..<$0.end], as: UTF8.self)) }
        }
        #expect(try run(at: 0) == nil)
        #expect(try run(at: 3).map(\.1) == #"'x\'y'"#)
        #expect(try run(at: 10).map(\.0) == .identifier(#"q"t"#))
        #expect(try run(at: 17).map(\.1) == "/* a /* b */ c */")
        #expect(try run(at: 35).map(\.0) == .dollarQuoted)
        #expect(try run(at: 45).map(\.1) == "-- end")
        #expect(throws: SQLLexer.Unterminated(what: "comment", offset: 0)) { try SQLLexer.quotedRun(in: Array("/* /* */".utf8), at: 0) }
    }

}
