import SpoutCore
import Testing

@testable import SpoutPostgres

/// The rewritten child queries are built once and kept, per child as written: two children
/// whose texts differ only in a parameter's name bind different arguments, so each keeps its
/// own rewrite. (No database: the rewrites are plain values.)
@Suite struct PostgresChildQueryCacheTests {
    static let key = [Column(label: "employeeNumber", type: .integer, databaseTypeName: "int4")]

    @Test func childrenThatDifferOnlyInAParameterNameKeepTheirOwnRewrites() throws {
        let first = try ParsedSQL("SELECT title FROM titles WHERE emp_no = :employeeNumber AND title <> :skip", dialect: .postgres)
        let second = try ParsedSQL("SELECT title FROM titles WHERE emp_no = :employeeNumber AND title <> :other", dialect: .postgres)
        #expect(first.text == second.text)
        for child in [first, second, first] {
            let cast = ParentKeyCast.cached(child: child, keyNames: ["employeeNumber"], keyColumns: Self.key)
            #expect(cast.sql.parameterNames == child.parameterNames)
            let batch = try LateralBatch.cached(child: child, keyNames: ["employeeNumber"], keyColumns: Self.key)
            #expect(batch.sql.parameterNames == ["spout_keys_1", child.parameterNames[1]])
        }
    }

    @Test func aBatchWrapsTheChildWithoutItsTrailingSemicolonsAndComments() throws {
        let child = try ParsedSQL("SELECT title FROM titles WHERE emp_no = :employeeNumber ; -- the end\n", dialect: .postgres)
        let batch = try LateralBatch.cached(child: child, keyNames: ["employeeNumber"], keyColumns: Self.key)
        #expect(!batch.sql.text.contains(";") && !batch.sql.text.contains("the end"))
    }

    /// A key's cast names the parent column's own type when that is a plain name, and a type
    /// that holds every value of its kind otherwise (a name that would need quoting).
    @Test func aKeyIsCastToItsOwnTypeWhenItsNameIsPlain() {
        let cases: [(String?, ColumnType, String)] = [
            ("int4", .integer, "int4"), ("varchar", .text, "varchar"), ("_int8", .array(.integer), "_int8"), ("Mood2", .text, "Mood2"),
            (nil, .integer, "int8"), ("", .date, "date"), ("my type", .text, "text"), ("public.mood", .text, "text"),
            ("humeur_é", .text, "text"), ("numeric(10,2)", .decimal, "numeric"), ("\"Quoted\"", .timestamp, "timestamptz"),
        ]
        for (name, type, expected) in cases {
            #expect(ParentKeyCast.typeName(of: Column(label: "k", type: type, databaseTypeName: name)) == expected, "\(name ?? "nil")")
        }
    }
}
