import SpoutCore
import Testing

/// Which column a write statement sets from which parameter (``AssignedColumns``), and the
/// columns SQLite's constraint messages name (``ViolatedConstraint/sqlite(message:)``).
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
        "INSERT INTO t (a) VALUES (:a), (:b)",
        "UPDATE t SET (a, b) = (:a, :b)",
        "SELECT :a AS a",
        "INSERT INTO t (a) VALUES ('unterminated",
    ])
    func unreadStatements(_ sql: String) {
        #expect(AssignedColumns(sql: sql).isEmpty)
    }

    @Test func theTableWrittenIsTheOneMatched() {
        let insert = AssignedColumns(sql: "INSERT OR REPLACE INTO main.Pet AS p (name) VALUES (:name)")
        #expect(insert.table == "pet")
        #expect(insert.parameter(forColumn: "name", of: "PET") == "name")
        // A trigger's write to another table fails on that table's constraint.
        #expect(insert.parameter(forColumn: "name", of: "pet_log") == nil)
        let update = AssignedColumns(sql: "UPDATE ONLY public.pet p SET name = :newName WHERE name = :name")
        #expect(update.table == "pet")
        #expect(update.parameter(forColumn: "name", of: "pet") == "newName")
    }

    @Test func sqliteMessagesNameTheirTableAndColumns() {
        #expect(ViolatedConstraint.sqlite(message: "UNIQUE constraint failed: pet.name") == ViolatedConstraint(columns: ["name"], table: "pet"))
        #expect(
            ViolatedConstraint.sqlite(message: "UNIQUE constraint failed: tag.owner, tag.name")
                == ViolatedConstraint(columns: ["owner", "name"], table: "tag"))
        #expect(ViolatedConstraint.sqlite(message: "NOT NULL constraint failed: tag.color") == ViolatedConstraint(columns: ["color"], table: "tag"))
        #expect(ViolatedConstraint.sqlite(message: "UNIQUE constraint failed: index 'tag_label'") == nil)
        // A CHECK is reported, not its columns: ``CheckConstraints`` finds them in the table's SQL.
        #expect(ViolatedConstraint.sqlite(message: "CHECK constraint failed: length(name) > 0") == ViolatedConstraint(columns: [], check: "length(name) > 0"))
        // A foreign key is reported without a name: the tracer finds it by its parent's rows.
        #expect(ViolatedConstraint.sqlite(message: "FOREIGN KEY constraint failed") == ViolatedConstraint(columns: [], foreignKey: ""))
        #expect(ViolatedConstraint.sqlite(message: "FOREIGN KEY constraint failed: x") == nil)
    }
}

@Suite("CHECK constraints read from CREATE TABLE")
struct CheckConstraintsTests {
    static let table = """
        CREATE TABLE "tag" (
            name TEXT PRIMARY KEY, -- CHECK (name <> '') in a comment is no constraint
            "Color" TEXT CHECK ("Color" IN ('red', 'blue (dark)')),
            a INT, b INT,
            CONSTRAINT a_small CHECK (abs(a) < 10),
            CHECK (a < b)
        )
        """
    static let columns = ["name", "Color", "a", "b"]

    @Test("a CHECK is found by its name or its expression as written; its columns in the table's order")
    func found() {
        #expect(CheckConstraints.columns(ofCheck: "\"Color\" IN ('red', 'blue (dark)')", createTable: Self.table, columns: Self.columns) == ["Color"])
        #expect(CheckConstraints.columns(ofCheck: "a_small", createTable: Self.table, columns: Self.columns) == ["a"])
        #expect(CheckConstraints.columns(ofCheck: "a < b", createTable: Self.table, columns: Self.columns) == ["a", "b"])
        #expect(CheckConstraints.columns(ofCheck: "name <> ''", createTable: Self.table, columns: Self.columns) == nil)
        #expect(CheckConstraints.columns(ofCheck: "b < a", createTable: Self.table, columns: Self.columns) == nil)
        #expect(CheckConstraints.columns(ofCheck: "a_small", createTable: "CREATE TABLE t (a INT CHECK (a > 0", columns: ["a"]) == nil)
    }
}
