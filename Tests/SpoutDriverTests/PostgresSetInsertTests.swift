import SpoutCore
import Testing

@testable import SpoutPostgres

/// Which inserts ``PostgresSetInsert`` rewrites to run over many records at once, and what it
/// makes of them, without a server; `PostgresSetWriteTests` runs the statements.
struct PostgresSetInsertTests {
    static func insert(_ sql: String) throws -> PostgresSetInsert? {
        PostgresSetInsert(try ParsedSQL(sql, dialect: .postgres))
    }

    @Test func anInsertSelectBecomesALateralQueryOverTheRecords() throws {
        let insert = try #require(
            try Self.insert(
                """
                INSERT INTO event (name, "date", type, remark)
                SELECT pet.name, :date, :type, :remark FROM pet WHERE pet.name = :name AND pet.owner = :claims.sub;
                """))
        #expect(insert.head == #"INSERT INTO event (name, "date", type, remark)"#)
        #expect(insert.columnCount == 4)
        let types = ["date", "character varying", "character varying", "character varying", "text"]
        let query = insert.query(types: types)
        #expect(
            query
                == "SELECT pet.name, (spout_r.spout_p1::date), (spout_r.spout_p2::character varying), (spout_r.spout_p3::character varying) "
                + "FROM pet WHERE pet.name = (spout_r.spout_p4::character varying) AND pet.owner = (spout_r.spout_p5::text)")
        let statement = insert.statement(records: "pg_temp.records", types: types)
        #expect(statement.contains("FROM pg_temp.records AS spout_r CROSS JOIN LATERAL (\n" + query + "\n)"))
        #expect(statement.contains("AS spout_q (spout_c1, spout_c2, spout_c3, spout_c4) WHERE spout_r.spout_ord BETWEEN :spout_first AND :spout_last"))
        #expect(statement.contains(#"INSERT INTO event (name, "date", type, remark) SELECT spout_c1, spout_c2, spout_c3, spout_c4 FROM spout_s"#))
    }

    @Test func valuesCastsAndARepeatedParameterKeepTheirPlaceholderNumbers() throws {
        let insert = try #require(try Self.insert("insert into public.pet as p (name, owner, born) values (:name, :claims.sub, :born::date + :name::int)"))
        #expect(insert.columnCount == 3)
        #expect(
            insert.query(types: ["text", "text", "date"])
                == "values ((spout_r.spout_p1::text), (spout_r.spout_p2::text), (spout_r.spout_p3::date)::date + (spout_r.spout_p1::text)::int)")
    }

    @Test func aTrailingCommentEndsBeforeTheStatementGoesOn() throws {
        let insert = try #require(try Self.insert("INSERT INTO pet (name) VALUES (:name) -- one pet"))
        #expect(insert.query(types: ["text"]) == "VALUES ((spout_r.spout_p1::text))")
        let withInner = try #require(try Self.insert("INSERT INTO pet (name) VALUES (:name -- its name\n)"))
        #expect(withInner.statement(records: "t", types: ["text"]).contains("VALUES ((spout_r.spout_p1::text) -- its name\n)\n)"))
    }

    @Test(
        "what one statement over all records would answer differently is declined",
        arguments: [
            "INSERT INTO pet (name) VALUES (:name) ON CONFLICT DO NOTHING",
            "INSERT INTO pet (name) VALUES (:name) ON CONFLICT (name) DO UPDATE SET owner = excluded.owner",
            "INSERT INTO pet (name) VALUES (:name) RETURNING name",
            "INSERT INTO pet (name) SELECT :name WHERE NOT EXISTS (SELECT 1 FROM pet WHERE name = :name)",
            #"INSERT INTO pet (name) SELECT :name WHERE NOT EXISTS (SELECT 1 FROM "PET" WHERE name = :name)"#,
            "INSERT INTO event (name, n) SELECT :name, count(*) + 1 FROM public.event WHERE name = :name",
            "INSERT INTO pet SELECT :name, :owner",
            "INSERT INTO pet DEFAULT VALUES",
            "INSERT INTO pet (name) OVERRIDING SYSTEM VALUE VALUES (:name)",
            "WITH n AS (SELECT :name AS name) INSERT INTO pet (name) SELECT name FROM n",
            "UPDATE pet SET owner = :owner WHERE name = :name",
            "DELETE FROM pet WHERE name = :name",
            "INSERT INTO pet (name) VALUES (:name); DELETE FROM pet",
            "INSERT INTO pet (name, :column) VALUES (:name, 1)",
        ])
    func declined(_ sql: String) throws {
        #expect(try Self.insert(sql) == nil, "\(sql)")
    }

    @Test func onInAJoinIsNotAConflictClause() throws {
        let insert = try #require(
            try Self.insert("INSERT INTO event (name, type) SELECT p.name, :type FROM pet p JOIN owner o ON o.name = p.owner WHERE p.name = :name"))
        #expect(insert.query(types: ["text", "text"]).contains("JOIN owner o ON o.name = p.owner WHERE p.name = (spout_r.spout_p2::text)"))
    }
}
