import SpoutCore
import Testing

/// Which column a write statement sets from which parameter (``AssignedColumns``), and the
/// columns SQLite's constraint messages name (``ViolatedConstraint/sqliteColumns(inMessage:)``).
@Suite struct AssignedColumnsTests {
    @Test func insertPairsColumnsWithTheirValues() {
        let assigned = AssignedColumns(
            sql: """
                INSERT INTO pet (name, owner, species, "Sex", birth)
                VALUES (:name, :claims.sub, COALESCE(:species, 'cat'), :sex::char(1), CAST(:birth AS date))
                RETURNING name, owner
                """)
        #expect(assigned.parameter(forColumn: "name") == "name")
        #expect(assigned.parameter(forColumn: "NAME") == "name")
        #expect(assigned.parameter(forColumn: "owner") == "claims.sub")
        #expect(assigned.parameter(forColumn: "species") == "species")
        #expect(assigned.parameter(forColumn: "sex") == "sex")
        #expect(assigned.parameter(forColumn: "birth") == "birth")
        #expect(assigned.parameter(forColumn: "death") == nil)
    }

    @Test func updateReadsItsSetListUpToWhere() {
        let assigned = AssignedColumns(
            sql: """
                -- a partial update
                UPDATE pet
                SET owner = COALESCE(:owner, owner), species = lower(:species),
                    death = birth
                WHERE name = :name AND owner = :claims.sub
                RETURNING name
                """)
        #expect(assigned.parameter(forColumn: "owner") == "owner")
        #expect(assigned.parameter(forColumn: "species") == "species")
        #expect(assigned.parameter(forColumn: "death") == nil)
        #expect(assigned.parameter(forColumn: "name") == nil)
    }

    @Test func anExpressionOfTwoParametersAssignsFromNone() {
        let assigned = AssignedColumns(sql: "INSERT INTO t (a, b) VALUES (:x || :y, :x || :x)")
        #expect(assigned.parameter(forColumn: "a") == nil)
        #expect(assigned.parameter(forColumn: "b") == "x")
    }

    @Test func aWithClauseIsSkipped() {
        let assigned = AssignedColumns(sql: "WITH n AS (SELECT :z AS z) INSERT INTO t (a) VALUES (:a)")
        #expect(assigned.parameter(forColumn: "a") == "a")
        #expect(assigned.parameter(forColumn: "z") == nil)
    }

    @Test("What this reading does not follow assigns nothing", arguments: [
        "INSERT INTO t (a, b) SELECT :a, :b",
        "INSERT INTO t VALUES (:a, :b)",
        "INSERT INTO t (a, b) VALUES (:a)",
        "UPDATE t SET (a, b) = (:a, :b)",
        "SELECT :a AS a",
        "INSERT INTO t (a) VALUES ('unterminated",
    ])
    func unreadStatements(_ sql: String) {
        #expect(AssignedColumns(sql: sql).isEmpty)
    }

    @Test func sqliteMessagesNameTheirColumns() {
        #expect(ViolatedConstraint.sqliteColumns(inMessage: "UNIQUE constraint failed: pet.name") == ["name"])
        #expect(ViolatedConstraint.sqliteColumns(inMessage: "UNIQUE constraint failed: tag.owner, tag.name") == ["owner", "name"])
        #expect(ViolatedConstraint.sqliteColumns(inMessage: "NOT NULL constraint failed: main.tag.color") == ["color"])
        #expect(ViolatedConstraint.sqliteColumns(inMessage: "UNIQUE constraint failed: index 'tag_label'") == nil)
        #expect(ViolatedConstraint.sqliteColumns(inMessage: "CHECK constraint failed: length(name) > 0") == nil)
        #expect(ViolatedConstraint.sqliteColumns(inMessage: "FOREIGN KEY constraint failed") == nil)
    }
}
