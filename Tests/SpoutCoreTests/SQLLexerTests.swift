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

    @Test func backtickIdentifiersHideColons() throws {
        let parsed = try self.postgres("SELECT `a:b`, `c``:d`, :p FROM t")
        #expect(parsed.parameterNames == ["p"])
        #expect(parsed.text == "SELECT `a:b`, `c``:d`, $1 FROM t")
    }
}

/// ``SQLLexer``'s token stream itself: kinds, ranges, and the cases its readers once read
/// differently.
@Suite struct SQLTokenStreamTests {
    /// `sql`'s tokens other than whitespace, as `kind text`.
    private func code(_ sql: String) throws -> [String] {
        let bytes = Array(sql.utf8)
        return try SQLLexer.tokens(of: sql).filter { $0.kind != .whitespace }.map { "\($0.kind) \($0.text(in: bytes))" }
    }

    @Test(arguments: [
        ("SELECT `a:b`, \"c:d\", 'e:f'",
         ["word SELECT", "quotedIdentifier `a:b`", "punctuation ,", "quotedIdentifier \"c:d\"", "punctuation ,", "string 'e:f'"]),
        (":p::int, x :: text, :claims.address.city",
         ["parameter :p", "cast ::", "word int", "punctuation ,", "word x", "cast ::", "word text", "punctuation ,",
          "parameter :claims.address.city"]),
        (":a. :a.1 :a..b :1 : :$",
         ["parameter :a", "punctuation .", "parameter :a", "punctuation .", "number 1", "parameter :a", "punctuation .",
          "punctuation .", "word b", "punctuation :", "number 1", "punctuation :", "punctuation :", "punctuation $"]),
        (#"E'it\'s' e'x' 'a\' 1e'y'"#,
         [#"string E'it\'s'"#, "string e'x'", #"string 'a\'"#, "number 1e", "string 'y'"]),
        ("$$ a:b $$ $t$ :x $ $t$ $1 a$b :q$$x$$",
         ["dollarQuotedString $$ a:b $$", "dollarQuotedString $t$ :x $ $t$", "punctuation $", "number 1", "word a$b",
          "parameter :q", "punctuation $", "punctuation $", "word x$$"]),
        ("-- :x\n/* :y /* :z */ */ :w",
         ["comment -- :x", "comment /* :y /* :z */ */", "parameter :w"]),
        ("f(a) >= 3.5 ? [1]",
         ["word f", "openParenthesis (", "word a", "closeParenthesis )", "punctuation >", "punctuation =", "number 3.5",
          "punctuation ?", "punctuation [", "number 1", "punctuation ]"]),
        ("SELECT ünïcode, \"naïve\", `a``b` FROM _t1",
         ["word SELECT", "word ünïcode", "punctuation ,", "quotedIdentifier \"naïve\"", "punctuation ,", "quotedIdentifier `a``b`",
          "word FROM", "word _t1"]),
    ])
    func tokens(sql: String, expected: [String]) throws {
        #expect(try self.code(sql) == expected)
    }

    @Test(arguments: [
        "SELECT emp_no AS \"employeeNumber\", e.first_name FROM employees e WHERE (:p IS NULL OR x = :p::int) -- end",
        "  SELECT $q$ ' $q$, E'\\'', `x`\r\n\t/* a /* b */ */ LIMIT :claims.sub;",
        "",
    ])
    func tokensCoverTheSourceInOrder(sql: String) throws {
        let tokens = try SQLLexer.tokens(of: sql)
        #expect(tokens.first?.range.lowerBound ?? 0 == 0)
        #expect(tokens.last?.range.upperBound ?? 0 == sql.utf8.count)
        #expect(zip(tokens, tokens.dropFirst()).allSatisfy { $0.range.upperBound == $1.range.lowerBound && !$0.range.isEmpty })
        #expect(tokens.map { $0.text(in: Array(sql.utf8)) }.joined() == sql)
    }

    @Test func quotedRunsAreFoundWhereTheyStart() throws {
        let sql = #"a E'x\'y' "q""t" /* a /* b */ c */ $t$ : $t$ -- end"#
        #expect(
            try self.code(sql) == [
                "word a", #"string E'x\'y'"#, #"quotedIdentifier "q""t""#, "comment /* a /* b */ c */", "dollarQuotedString $t$ : $t$",
                "comment -- end",
            ])
        let tokens = try SQLLexer.tokens(of: sql)
        #expect(tokens.compactMap { $0.identifier(in: Array(sql.utf8)) } == ["a", #"q"t"#])
        let error = try #require(throws: SQLSyntaxError.self) { try SQLLexer.tokens(of: "/* /* */") }
        #expect(error.offset == 0)
        #expect(error.reason == "unterminated comment")
    }

    @Test(arguments: [
        ("SELECT `abc", 7, "unterminated quoted identifier"),
        ("SELECT `a``", 7, "unterminated quoted identifier"),
        ("SELECT e'\\", 8, "unterminated string"),
        ("SELECT $$", 7, "unterminated dollar quote"),
    ])
    func unterminatedRunsThrowWhereTheyStart(sql: String, offset: Int, reason: String) throws {
        var lexer = SQLLexer(sql)
        var tokens: [SQLToken] = []
        let error = try #require(throws: SQLSyntaxError.self) {
            while let token = try lexer.next() { tokens.append(token) }
        }
        #expect(error.offset == offset)
        #expect(error.reason == reason)
        #expect(tokens.last?.range.upperBound == 7)
        #expect(try lexer.next() == nil)
        // The named-parameter parser reports what the lexer does.
        #expect(try #require(throws: SQLSyntaxError.self) { try ParsedSQL(sql, dialect: .sqlite) } == error)
    }

    @Test func identifiersUndoTheirQuotes() throws {
        let sql = #"Name "say ""hi""" `a``b` 'text' :p"#
        let bytes = Array(sql.utf8)
        let tokens = try SQLLexer.tokens(of: sql).filter { !$0.isTrivia }
        #expect(tokens.map { $0.identifier(in: bytes) } == ["Name", #"say "hi""#, "a`b", nil, nil])
        #expect(tokens.map { $0.parameterName(in: bytes) } == [nil, nil, nil, nil, "p"])
    }

    @Test(arguments: [("select", true), ("SeLeCt", true), ("SELECT", true), ("selects", false), ("\"SELECT\"", false), ("sel", false)])
    func wordsMatchKeywordsWithoutCase(sql: String, matches: Bool) throws {
        let token = try #require(try SQLLexer.tokens(of: sql).first)
        #expect(token.isWord("SELECT", in: Array(sql.utf8)) == matches)
    }
}

/// Every reader of SQL text on the cases where, before they shared ``SQLLexer``'s tokens, they
/// read differently: backtick identifiers, dotted parameters, keywords in quoted text, comments
/// between keywords.
@Suite struct SQLReadersTests {
    private func page(_ body: String) -> String {
        "SELECT * FROM (\n\(body)\n) AS spout_page\nORDER BY \"a\"\nLIMIT :spout_page_limit"
    }

    @Test(arguments: [
        ("SELECT `limit`, \"offset\" FROM t ORDER BY a", "SELECT `limit`, \"offset\" FROM t"),
        ("SELECT :claims.limit AS a FROM t ORDER BY a", "SELECT :claims.limit AS a FROM t"),
        ("SELECT a FROM t ORDER /* by name */ BY a;", "SELECT a FROM t"),
        ("SELECT a FROM t WHERE b < :limit::int AND c = ':offset' ORDER BY a", "SELECT a FROM t WHERE b < :limit::int AND c = ':offset'"),
        ("SELECT a FROM t order\n-- then\nby a ;  ;\n", "SELECT a FROM t"),
        ("SELECT 'LIMIT 1' AS a -- fetch\nFROM t ORDER BY a", "SELECT 'LIMIT 1' AS a -- fetch\nFROM t"),
        ("SELECT a FROM t WHERE b = $$ORDER BY$$ ;\n", "SELECT a FROM t WHERE b = $$ORDER BY$$"),
        ("SELECT a FROM (SELECT a FROM t ORDER BY a LIMIT 5) s ORDER BY a", "SELECT a FROM (SELECT a FROM t ORDER BY a LIMIT 5) s"),
        ("SELECT a, row_number() OVER (ORDER BY a) FROM t", "SELECT a, row_number() OVER (ORDER BY a) FROM t"),
        ("SELECT a FROM t; -- the end", "SELECT a FROM t"),
        ("SELECT a FROM t ORDER BY a; /* done */\n", "SELECT a FROM t"),
    ])
    func keysetPagesDropOnlyTheFinalOrder(sql: String, body: String) throws {
        #expect(try KeysetQuery(sql, key: ["a"]).first == self.page(body))
    }

    @Test(arguments: [
        ("SELECT a FROM t LIMIT 5", "the SQL has a LIMIT clause"),
        ("SELECT a FROM t ORDER BY a offset 5", "the SQL has a OFFSET clause"),
        ("SELECT a FROM t Fetch FIRST 5 ROWS ONLY", "the SQL has a FETCH clause"),
        ("SELECT a FROM t WHERE b = 'x", "the SQL has an unterminated string"),
        ("SELECT `a FROM t", "the SQL has an unterminated quoted identifier"),
    ])
    func keysetPagesRefuse(sql: String, reason: String) {
        #expect {
            try KeysetQuery(sql, key: ["a"])
        } throws: { error in
            (error as? KeysetQuery.Unpageable)?.description.hasPrefix(reason) == true
        }
    }

    /// What a detail batch wraps in a subquery: the code, without what ends the statement.
    @Test(arguments: [
        ("SELECT a FROM t WHERE b = :b;", "SELECT a FROM t WHERE b = $1"),
        ("SELECT a FROM t WHERE b = :b ; ; -- done\n/* really */\n", "SELECT a FROM t WHERE b = $1"),
        ("SELECT ';' AS s, :b AS b -- a comment; not code\n", "SELECT ';' AS s, $1 AS b"),
        ("SELECT a /* ; */ FROM t WHERE b = :b", "SELECT a /* ; */ FROM t WHERE b = $1"),
    ])
    func trailingSemicolonsAndCommentsAreDropped(sql: String, expected: String) throws {
        let trimmed = try ParsedSQL(sql, dialect: .postgres).withoutTrailingSemicolons()
        #expect(trimmed.text == expected)
        #expect(trimmed.parameterNames == ["b"])
    }

    @Test func optionalClausesReadDottedParameters() throws {
        let sql = "SELECT 1 FROM pets WHERE (:claims.sub::text IS NULL OR owner = :claims.sub)"
        let clauses = try OptionalClauses(sql)
        #expect(clauses.clauses.map(\.parameter) == ["claims.sub"])
        #expect(clauses.rendered([.absent]) == "SELECT 1 FROM pets WHERE (1 = 1)")
        let filtered = try FilteredSQL(sql, dialect: .postgres)
        #expect(try filtered.statement(for: ["claims.sub": .text("ann")]).text == "SELECT 1 FROM pets WHERE (owner = $1)")
    }

    @Test(arguments: [
        "SELECT 1 FROM t WHERE (`:p IS NULL OR x` = 1)",
        "SELECT 1 FROM t WHERE (\":p IS NULL OR x\" = 1)",
        "SELECT 1 FROM t WHERE ($$:p IS NULL OR x$$ = 'y')",
        "SELECT 1 FROM t WHERE (/* :p IS NULL OR */ x = 1)",
    ])
    func optionalClausesIgnoreQuotedText(sql: String) throws {
        #expect(try OptionalClauses(sql).clauses.isEmpty)
    }

    @Test func optionalClauseWordsAreBareWords() throws {
        let clauses = try OptionalClauses("SELECT 1 FROM t e WHERE (:p IS NULL OR e.last_name = :p OR `first_name` = :claims.name)")
        let clause = try #require(clauses.clauses.first)
        #expect(clauses.words(of: clause) == ["E", "LAST_NAME", "OR"])
    }

    @Test func optionalClausesReportUnterminatedQuotes() {
        #expect {
            try OptionalClauses("SELECT 1 FROM t\nWHERE (:p IS NULL OR `a = :p)")
        } throws: { error in
            guard let error = error as? OptionalClauseError else { return false }
            return error.reason == "unterminated quoted identifier" && error.line == 2 && error.column == 22
        }
    }
}
