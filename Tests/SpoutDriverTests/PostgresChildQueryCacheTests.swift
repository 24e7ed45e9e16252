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
}
