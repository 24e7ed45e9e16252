import SpoutCore
import Testing

/// The recognition of optional clauses `(:p IS NULL OR predicate)` and their reduction per
/// combination of given arguments (``OptionalClauses``, ``FilteredSQL``).
@Suite struct OptionalClausesTests {
    static let employees = """
        SELECT emp_no FROM employees
        WHERE (:firstName IS NULL OR first_name = :firstName)
          AND (CAST(:lastName AS text) IS NULL OR last_name = CAST(:lastName AS text))
          AND (:hiredAfter::date is null or hire_date > :hiredAfter::date)
        ORDER BY emp_no
        """

    @Test func findsEachFormOfTheNullTest() throws {
        let clauses = try OptionalClauses(Self.employees)
        #expect(clauses.clauses.map(\.parameter) == ["firstName", "lastName", "hiredAfter"])
    }

    @Test func reducesEachClauseForItsArgument() throws {
        let clauses = try OptionalClauses(Self.employees)
        let arguments: [String: SQLValue] = ["firstName": .null, "lastName": .text("Haddad"), "hiredAfter": .array([])]
        let choices = clauses.choices(for: arguments)
        #expect(choices == [.absent, .present, .asWritten])
        #expect(
            clauses.rendered(choices) == """
                SELECT emp_no FROM employees
                WHERE (1 = 1)
                  AND (last_name = CAST(:lastName AS text))
                  AND (:hiredAfter::date is null or hire_date > :hiredAfter::date)
                ORDER BY emp_no
                """)
        #expect(clauses.rendered(clauses.clauses.map { _ in .asWritten }) == Self.employees)
    }

    @Test func anEmptyStringIsAValue() throws {
        let clauses = try OptionalClauses("SELECT 1 FROM t WHERE (:name IS NULL OR name = :name)")
        #expect(clauses.choices(for: ["name": .text("")]) == [.present])
        #expect(clauses.choices(for: [:]) == [.asWritten])
    }

    @Test func thePredicateKeepsEverythingUpToTheClosingParenthesis() throws {
        let sql = "SELECT 1 FROM t WHERE (:p IS NULL OR a = :p OR (b = 1 AND c = ')')) -- (:q IS NULL OR x)\nAND d = 2"
        let clauses = try OptionalClauses(sql)
        #expect(clauses.clauses.map(\.parameter) == ["p"])
        #expect(
            clauses.rendered([.present])
                == "SELECT 1 FROM t WHERE (a = :p OR (b = 1 AND c = ')')) -- (:q IS NULL OR x)\nAND d = 2")
    }

    @Test(arguments: [
        "SELECT 1 FROM t WHERE :p IS NULL = false",
        "SELECT 1 FROM t WHERE (:p IS NULL)",
        "SELECT 1 FROM t WHERE (:p IS NOT NULL OR a = :p)",
        "SELECT 1 FROM t WHERE (a IS NULL OR a = :p)",
        "SELECT '(:p IS NULL OR a = 1)' FROM t",
        "SELECT 1 FROM t WHERE (x AND (CAST(:p AS text) = 'a'))",
    ])
    func leavesOtherSQLAlone(sql: String) throws {
        #expect(try OptionalClauses(sql).clauses.isEmpty)
        #expect(try FilteredSQL(sql, dialect: .postgres).statement(for: ["p": .text("a")]).source == sql)
    }

    @Test(arguments: [
        ("SELECT 1 FROM t WHERE :p IS NULL OR a = :p", "must open parentheses of its own", 1, 23),
        ("SELECT 1 FROM t\nWHERE (b = 1 AND :p IS NULL OR a = :p)", "must open parentheses of its own", 2, 18),
        ("SELECT 1 FROM t WHERE (:p IS NULL OR :q IS NULL OR a = :p)", "must open parentheses of its own", 1, 38),
        ("SELECT 1 FROM t WHERE (:p IS NULL OR (:q IS NULL OR a = :q))", "is inside the optional clause of :p", 1, 38),
        ("SELECT 1 FROM t WHERE (:p IS NULL OR)", "has nothing after OR", 1, 35),
        ("SELECT 1 FROM t WHERE (:p IS NULL OR a = ':p)", "unterminated string", 1, 42),
    ])
    func refuses(sql: String, reason: String, line: Int, column: Int) {
        #expect {
            try OptionalClauses(sql)
        } throws: { error in
            guard let error = error as? OptionalClauseError else { return false }
            return error.reason.contains(reason) && error.line == line && error.column == column
        }
    }

    @Test func refusesMoreClausesThanTheBound() throws {
        let count = OptionalClauses.maximumCount
        let within = (0..<count).map { "(:p\($0) IS NULL OR c = :p\($0))" }.joined(separator: " AND ")
        #expect(try OptionalClauses("SELECT 1 FROM t WHERE " + within).clauses.count == count)
        #expect(throws: OptionalClauseError.self) {
            try OptionalClauses("SELECT 1 FROM t WHERE " + within + " AND (:extra IS NULL OR c = :extra)")
        }
    }

    @Test(arguments: [SQLDialect.postgres, .sqlite])
    func filteredStatementsBindWhatTheyKeep(dialect: SQLDialect) throws {
        let filtered = try FilteredSQL(Self.employees, dialect: dialect)
        let absent = try filtered.statement(for: ["firstName": .null, "lastName": .null, "hiredAfter": .null])
        #expect(absent.parameterNames.isEmpty)
        let one = try filtered.statement(for: ["firstName": .null, "lastName": .text("Haddad"), "hiredAfter": .null])
        #expect(one.parameterNames == ["lastName"])
        #expect(one.text.contains("(last_name = CAST(\(dialect.placeholder(1)) AS text))"))
        // The same combination is the same statement, whatever the values.
        let again = try filtered.statement(for: ["firstName": .null, "lastName": .text("Rossi"), "hiredAfter": .null])
        #expect(again == one)
    }
}
