import Foundation
import SpoutCore
@testable import SpoutEndpoints
import SpoutHTTP
import Testing

@Suite("Endpoint files")
struct EndpointValidationTests {
    /// A temporary service directory: `endpoints/*.yaml` and `sql/`.
    struct Fixture {
        let directory: TemporaryDirectory
        var sqlDirectory: String { (self.directory.path as NSString).appendingPathComponent("sql") }

        init(sql: [String: String] = [:]) throws {
            self.directory = try TemporaryDirectory()
            try FileManager.default.createDirectory(atPath: (self.directory.path as NSString).appendingPathComponent("sql"), withIntermediateDirectories: true)
            for (path, text) in sql { try self.directory.write("sql/" + path, text) }
        }

        func endpointFile(_ name: String, _ yaml: String) throws -> String {
            try self.directory.write("endpoints/" + name, yaml)
        }

        func load(_ files: [String]) throws -> EndpointSet {
            try EndpointSet.load(files: files, sqlDirectory: self.sqlDirectory, environment: [:])
        }

        /// Loads one file and returns the error it must raise.
        func error(_ yaml: String) throws -> ConfigurationError? {
            let file = try self.endpointFile("api.yaml", yaml)
            return #expect(throws: ConfigurationError.self) { try self.load([file]) }
        }
    }

    @Test("the shipped endpoint files load")
    func shipped() throws {
        let set = try Repository.shippedEndpoints()
        let titles = set.endpoints.map(\.title)
        #expect(titles == [
            "GET /employees", "GET /employees/{employeeNumber}", "GET /employees/{employeeNumber}/titles",
            "GET /employees/{employeeNumber}/salaries", "GET /departments", "GET /departments/{departmentNumber}",
            "GET /departments/{departmentNumber}/employees",
            "GET /salaries", "GET /pets", "POST /pets", "GET /pets/{name}", "POST /pets/{name}", "DELETE /pets/{name}",
            "POST /events", "GET /owners",
        ])
        let employee = try #require(set.endpoints.first { $0.path == "/employees/{employeeNumber}" })
        #expect(employee.result == .object)
        #expect(employee.readOnly)
        #expect(employee.details.map(\.name) == ["titles", "salaries"])
        #expect(employee.detailsParameter == "details")
        #expect(employee.labels == ["employeeNumber", "firstName", "lastName"])
        let details = try #require(employee.parameters.first { $0.name == "details" })
        #expect(details.type == .list(.string))
        #expect(details.allowedValues == [.text("titles"), .text("salaries")])
        let list = try #require(set.endpoints.first { $0.path == "/employees" })
        #expect(list.sql.overrides[.postgres] != nil)
        #expect(list.sql.overrides[.sqlite] == nil)
        #expect(list.sql.text(for: .postgres).contains("CAST(:lastName AS text)"))
        let delete = try #require(set.endpoints.first { $0.method == .delete })
        #expect(!delete.readOnly)
        #expect(delete.parameters.map(\.name) == ["name"])
    }

    @Test("an unknown key names its line")
    func unknownKey() throws {
        let fixture = try Fixture()
        let error = try fixture.error("""
            paths:
              /things:
                get:
                  sql: SELECT 1 AS one
                  rowlimit: 10
            """)
        #expect(error?.line == 5)
        #expect(error?.message.hasPrefix("unknown key 'rowlimit' in GET /things (known keys: description, sql, sqlFile,") == true)
        #expect(error?.file.hasSuffix("endpoints/api.yaml") == true)
    }

    @Test("consistency is replica by default, primary on request, and only for read-only endpoints")
    func consistency() throws {
        let fixture = try Fixture()
        let file = try fixture.endpointFile("api.yaml", """
            paths:
              /fresh:
                get:
                  sql: SELECT 1 AS one
                  consistency: primary
              /any:
                get:
                  sql: SELECT 1 AS one
            """)
        let endpoints = try fixture.load([file]).endpoints
        #expect(endpoints.map(\.consistency) == [.primary, .replica])
        let unknown = try fixture.error("""
            paths:
              /things:
                get:
                  sql: SELECT 1 AS one
                  consistency: eventual
            """)
        #expect(unknown?.line == 5 && unknown?.message == "unknown consistency 'eventual' (known: replica, primary)")
        let write = try fixture.error("""
            paths:
              /things:
                post:
                  sql: DELETE FROM things
                  result: none
                  consistency: primary
            """)
        #expect(write?.message == "'consistency' is for read-only endpoints; writes always run on the primary")
    }

    @Test("an unknown parameter key or type names its line")
    func unknownType() throws {
        let fixture = try Fixture()
        let type = try fixture.error("""
            paths:
              /things:
                get:
                  sql: SELECT :n AS n
                  parameters:
                    - name: n
                      type: int
            """)
        #expect(type?.line == 7)
        #expect(type?.message.hasPrefix("unknown type 'int' (known: string, integer, number, decimal, boolean, date, datetime, bytes, list of string") == true)
        let key = try fixture.error("""
            paths:
              /things:
                get:
                  sql: SELECT :n AS n
                  parameters:
                    - name: n
                      requird: true
            """)
        #expect(key?.line == 7)
        #expect(key?.message.hasPrefix("unknown key 'requird' in a parameter") == true)
        let list = try fixture.error("""
            paths:
              /things:
                get:
                  sql: SELECT 1 AS n
                  parameters:
                    - name: ids
                      type: list of list of integer
            """)
        #expect(list?.line == 7)
        #expect(list?.message.hasPrefix("unknown type 'list of list of integer'") == true)
    }

    @Test("a duplicate route names both places, also across files and key names")
    func duplicateRoute() throws {
        let fixture = try Fixture()
        let first = try fixture.endpointFile("a.yaml", "paths:\n  /pets/{name}:\n    get:\n      sql: SELECT :name AS name\n")
        let second = try fixture.endpointFile(
            "b.yaml", "paths:\n  /pets:\n    get:\n      sql: SELECT 1 AS one\n  /pets/{id}:\n    get:\n      sql: SELECT :id AS id\n")
        let error = #expect(throws: ConfigurationError.self) { try fixture.load([first, second]) }
        #expect(error?.file == second)
        #expect(error?.line == 6)
        #expect(error?.message == "duplicate route GET /pets/{id}: GET /pets/{name} is already declared at \(first):3")
        // The same path twice in one file is a YAML duplicate key.
        let same = try fixture.error("paths:\n  /a:\n    get:\n      sql: SELECT 1 AS x\n  /a:\n    post:\n      sql: SELECT 1 AS x\n")
        #expect(same?.line == 5)
        #expect(same?.message == "duplicate key '/a' in the same mapping")
        // Different methods on one path are fine.
        let fine = try fixture.endpointFile("c.yaml", "paths:\n  /a:\n    get:\n      sql: SELECT 1 AS x\n    delete:\n      sql: DELETE FROM a\n      result: none\n")
        #expect(try fixture.load([fine]).endpoints.count == 2)
    }

    @Test("a missing SQL file names the line of sqlFile")
    func missingSQLFile() throws {
        let fixture = try Fixture()
        let error = try fixture.error("""
            paths:
              /things:
                get:
                  description: things
                  sqlFile: things/all.sql
            """)
        #expect(error?.line == 5)
        #expect(error?.message.hasPrefix("SQL file 'things/all.sql' not found (looked for ") == true)
        let escape = try fixture.error("paths:\n  /x:\n    get:\n      sqlFile: ../secret.sql\n")
        #expect(escape?.message == "'sqlFile' must be a path inside the SQL directory, not '../secret.sql'")
    }

    @Test("an undeclared SQL parameter names the SQL file and the line in it")
    func undeclaredParameter() throws {
        let fixture = try Fixture(sql: [
            "things/by-owner.sql": "-- things of :owner (comments do not count)\nSELECT name\nFROM things\nWHERE owner = :owner\n  AND kind = :kind\n"
        ])
        let error = try fixture.error("""
            paths:
              /things:
                get:
                  sqlFile: things/by-owner.sql
                  parameters:
                    - name: owner
            """)
        #expect(error?.file == (fixture.sqlDirectory as NSString).appendingPathComponent("things/by-owner.sql"))
        #expect(error?.line == 5)
        #expect(error?.message == "parameter :kind is not declared; add it to 'parameters' of GET /things")
        // Inline SQL: the endpoint file, at the SQL's line.
        let inline = try fixture.error("""
            paths:
              /things:
                get:
                  sql: |
                    SELECT name
                    FROM things
                    WHERE owner = :owner
            """)
        #expect(inline?.file.hasSuffix("endpoints/api.yaml") == true)
        #expect(inline?.line == 7)
    }

    @Test("a dialect override is checked too, and wins for its dialect")
    func overrides() throws {
        let fixture = try Fixture(sql: [
            "t.sql": "SELECT name FROM t WHERE (:owner IS NULL OR owner = :owner)",
            "postgres/t.sql": "SELECT name FROM t\nWHERE (CAST(:ownr AS text) IS NULL)",
        ])
        let error = try fixture.error("paths:\n  /t:\n    get:\n      sqlFile: t.sql\n      parameters:\n        - name: owner\n")
        #expect(error?.file == (fixture.sqlDirectory as NSString).appendingPathComponent("postgres/t.sql"))
        #expect(error?.line == 2)
        #expect(error?.message == "parameter :ownr is not declared; add it to 'parameters' of GET /t")

        try fixture.directory.write("sql/postgres/t.sql", "SELECT name FROM t WHERE (CAST(:owner AS text) IS NULL)")
        try fixture.directory.write("sql/sqlite/t.sql", "SELECT name FROM t WHERE owner IS :owner")
        let file = try fixture.endpointFile("ok.yaml", "paths:\n  /t:\n    get:\n      sqlFile: t.sql\n      parameters:\n        - name: owner\n")
        let endpoint = try #require(try fixture.load([file]).endpoints.first)
        #expect(endpoint.sql.text(for: .postgres) == "SELECT name FROM t WHERE (CAST(:owner AS text) IS NULL)")
        #expect(endpoint.sql.text(for: .sqlite) == "SELECT name FROM t WHERE owner IS :owner")
    }

    @Test("detail SQL may use parent labels and declared parameters, nothing else")
    func detailParameters() throws {
        let fixture = try Fixture(sql: [
            "parent.sql": "SELECT p.id AS \"parentId\", p.kind, name FROM parent p WHERE p.kind = :kind",
            "children.sql": "SELECT c.name\nFROM child c\nWHERE c.parent_id = :parentId AND c.kind = :kind AND c.name = :name",
            "bad-children.sql": "SELECT c.name\nFROM child c\nWHERE c.parent_id = :parent_id",
        ])
        let good = try fixture.endpointFile("good.yaml", """
            paths:
              /parents:
                get:
                  sqlFile: parent.sql
                  parameters:
                    - {name: kind, required: true}
                  details:
                    - name: children
                      sqlFile: children.sql
            """)
        let endpoint = try #require(try fixture.load([good]).endpoints.first)
        #expect(endpoint.labels == ["parentId", "kind", "name"])
        #expect(endpoint.parameters.map(\.name) == ["kind", "details"])

        let error = try fixture.error("""
            paths:
              /parents:
                get:
                  sqlFile: parent.sql
                  parameters:
                    - {name: kind, required: true}
                  details:
                    - name: children
                      sqlFile: bad-children.sql
            """)
        #expect(error?.file == (fixture.sqlDirectory as NSString).appendingPathComponent("bad-children.sql"))
        #expect(error?.line == 3)
        #expect(error?.message == "parameter :parent_id of detail 'children' is neither a parameter of GET /parents nor a column label found in its SQL (known names: details, kind, name, parentId)")

        let unknownKey = try fixture.error("""
            paths:
              /parents:
                get:
                  sqlFile: parent.sql
                  parameters:
                    - {name: kind}
                  details:
                    - name: children
                      sqlFile: children.sql
                      order: 1
            """)
        #expect(unknownKey?.line == 10)
        #expect(unknownKey?.message == "unknown key 'order' in a detail (known keys: name, sql, sqlFile, description, details)")
    }

    @Test(
        "invalid values name their line",
        arguments: [
            ("paths:\n  /x:\n    get:\n      sql: SELECT 1 AS x\n      readOnly: false\n", 5,
             "a GET endpoint is always read-only; use POST, PUT, PATCH or DELETE to write"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT 1 AS x\n      result: many\n", 5,
             "unknown result 'many' (known: rows, object, scalar, none, created, bytes)"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT 1 AS x\n      result: bytes\n", 4,
             "result 'bytes' needs 'mediaType', the Content-Type of the body (like image/png)"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT 1 AS x\n      result: bytes\n      mediaType: png\n", 6,
             "'mediaType' must be a media type like image/png, not 'png'"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT 1 AS x\n      result: object\n      mediaType: image/png\n", 6,
             "'mediaType' is for result 'bytes' (the type served) or a 'body' (the type accepted) only"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT 1 AS x\n      result: bytes\n      mediaType: image/*\n", 6,
             "'mediaType' of result 'bytes' is the Content-Type sent: one type like image/png, not 'image/*' (or store each file's type and name its column in 'mediaTypeColumn')"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT 1 AS x, 2 AS t\n      result: bytes\n      mediaType: image/*\n      mediaTypeColumn: x\n", 7,
             "'mediaTypeColumn' names a column after the file (the first) in the select list; 'x' is not one of them (t)"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT 1 AS x, 2 AS t\n      result: object\n      mediaTypeColumn: t\n", 6,
             "'mediaTypeColumn' is for result 'bytes' only"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT 1 AS x\n      maxBodyBytes: 10\n", 5,
             "'maxBodyBytes' limits the request body of a POST, PUT or PATCH; GET has none"),
            ("paths:\n  /x:\n    put:\n      sql: UPDATE x SET a = :t\n      result: none\n      mediaTypeParameter: t\n", 6,
             "'mediaTypeParameter' receives the media type of an upload's 'body'; this endpoint has none"),
            ("paths:\n  /x:\n    put:\n      sql: UPDATE x SET a = :p\n      result: none\n      body: p\n      mediaTypeParameter: p\n      parameters:\n        p: {type: bytes}\n", 7,
             "'mediaTypeParameter' must name a parameter of its own (letters, digits, _), not the body or a path key: 'p'"),
            ("paths:\n  /x:\n    put:\n      sql: UPDATE x SET a = :p, b = :t\n      result: none\n      body: p\n      mediaTypeParameter: t\n      parameters:\n        p: {type: bytes}\n        t: {type: integer}\n", 7,
             "the media type parameter 't' is text: declare it type string, not integer"),
            ("paths:\n  /x:\n    put:\n      sql: UPDATE x SET a = 1\n      result: none\n      mediaType: image/png\n", 6,
             "'mediaType' is for result 'bytes' (the type served) or a 'body' (the type accepted) only"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT :p AS x\n      body: p\n      parameters:\n        p: {type: bytes}\n", 5,
             "'body' takes the request body of a POST, PUT or PATCH as a parameter; GET has no body"),
            ("paths:\n  /x:\n    put:\n      sql: UPDATE x SET a = :p\n      result: none\n      body: photo\n      parameters:\n        p: {type: bytes}\n", 6,
             "'body' names the parameter that receives the request body; declare 'photo' (type bytes) under 'parameters'"),
            ("paths:\n  /x/{p}:\n    put:\n      sql: UPDATE x SET a = :p\n      result: none\n      body: p\n", 6,
             "'body' names the parameter that receives the request body; declare 'p' (type bytes) under 'parameters'"),
            ("paths:\n  /x:\n    put:\n      sql: UPDATE x SET a = :p\n      result: none\n      body: p\n      parameters:\n        p: {type: integer}\n", 6,
             "the body parameter 'p' must be of type bytes (a file as it is) or string (text), not integer"),
            ("paths:\n  /x:\n    put:\n      sql: UPDATE x SET a = :p\n      result: none\n      parameters:\n        p: {type: bytes, allowedValues: [AAAA]}\n", 7,
             "'allowedValues' does not apply to bytes parameters ('p')"),
            ("paths:\n  /x:\n    post:\n      sql: SELECT 1 AS x\n      result: bytes\n      mediaType: image/png\n", 5,
             "result 'bytes' answers a GET with a stored file; POST cannot use it"),
            ("paths:\n  /x:\n    fetch:\n      sql: SELECT 1 AS x\n", 3,
             "unknown key 'fetch' in path '/x' (known keys: delete, get, patch, post, put)"),
            ("paths:\n  x:\n    get:\n      sql: SELECT 1 AS x\n", 2, "path 'x' must start with '/'"),
            ("paths:\n  /x:\n    get:\n      description: nothing\n", 4,
             "GET /x needs 'sql' (inline) or 'sqlFile' (a file under the SQL directory)"),
            ("paths:\n  /x:\n    post:\n      sql: INSERT INTO x VALUES (1)\n      result: created\n", 4,
             "result 'created' needs 'location', the path of the new resource (like /pets/{name})"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT :n AS n\n      parameters:\n        - name: n\n          type: integer\n          default: ten\n", 8,
             "default 'ten' is not a valid integer"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT :d AS d\n      parameters:\n        - name: d\n          type: date\n          default: 0000-01-01\n", 8,
             "default '0000-01-01': date out of range (0001-01-01 to 9999-12-31)"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT :n AS n\n      parameters:\n        - name: n\n          minimum: 1\n", 7, "'minimum' applies to integer and number parameters; 'n' is of type string"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT :n AS n\n      parameters:\n        - name: n\n          type: integer\n          maxLength: 3\n", 8, "'maxLength' applies to string parameters; 'n' is of type integer"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT :n AS n\n      parameters:\n        - name: n\n          type: integer\n          minimum: 5\n          maximum: 4\n", 9, "'minimum' of 'n' is above its 'maximum'"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT :n AS n\n      parameters:\n        - name: n\n          minLength: 2\n          maxLength: 1\n", 8, "'minLength' of 'n' is above its 'maxLength'"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT :n AS n\n      parameters:\n        - name: n\n          maxLength: -1\n", 7, "'maxLength' must be in 0...2147483647, not -1"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT :n AS n\n      parameters:\n        - name: n\n          type: integer\n          maximum: 10\n          default: 11\n", 9, "default '11': integer out of range (at most 10)"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT :n AS n\n      parameters:\n        - name: n\n          type: list of string\n          maxLength: 2\n          allowedValues: [ab, abc]\n", 9,
             "allowed value 'abc': text too long (at most 2 characters)"),
            ("paths:\n  /x/{id}:\n    get:\n      sql: SELECT :id AS id\n      parameters:\n        - name: id\n          required: false\n", 7,
             "parameter 'id' is a path key, which is always required"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT 1 AS x\n      timeoutMs: 0\n", 5, "'timeoutMs' must be in 1...86400000, not 0"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT 1 AS x\n      rowLimit: many\n", 5, "'rowLimit' must be an integer, not 'many'"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT 'unterminated AS x\n", 4, "invalid SQL: unterminated string"),
            ("paths:\n  /x:\n    get:\n      sql: SELECT 1 AS x\n      details:\n        - {name: x, sql: SELECT 2 AS y}\n", 6,
             "detail 'x' has the name of a column of GET /x; rename one of them"),
            ("paths:\n  /openapi.json:\n    get:\n      sql: SELECT 1 AS x\n", 3,
             "GET /openapi.json is the generated OpenAPI document; choose another path"),
            ("pahts:\n  /x:\n    get:\n      sql: SELECT 1 AS x\n", 1,
             "unknown key 'pahts' in an endpoint file (known keys: description, auth, paths)"),
        ])
    func invalidValues(yaml: String, line: Int, message: String) throws {
        let fixture = try Fixture()
        let error = try fixture.error(yaml)
        #expect(error?.line == line)
        #expect(error?.message == message)
    }

    @Test("labels are read from the outermost select list")
    func labels() throws {
        func labels(_ sql: String) -> [String] { SQLLabels.labels(of: sql).labels }
        #expect(labels("SELECT emp_no AS \"employeeNumber\", e.first_name, last_name ln FROM employees e") == ["employeeNumber", "first_name", "ln"])
        #expect(labels("WITH x AS (SELECT a AS inner_a FROM t) SELECT count(*) AS n, CAST(:d AS date) AS \"day\" FROM x") == ["n", "day"])
        #expect(labels("-- SELECT nope AS no\nSELECT 'a, b' AS \"text\", (SELECT max(v) FROM w) AS top FROM t") == ["text", "top"])
        #expect(labels("INSERT INTO pet (name) VALUES (:name) RETURNING name, birth AS born") == ["name", "born"])
        #expect(!SQLLabels.labels(of: "SELECT * FROM t").complete)
        #expect(!SQLLabels.labels(of: "SELECT a + 1 FROM t").complete)
        #expect(SQLLabels.labels(of: "SELECT DISTINCT a, b AS c FROM t").labels == ["a", "c"])
        // The parser's own scanner: E'' strings with backslash escapes, nested comments,
        // dollar quotes and doubled quotes in identifiers are read as PostgreSQL reads them.
        #expect(labels(#"SELECT E'it\'s, x' AS said, b FROM t"#) == ["said", "b"])
        #expect(labels("SELECT /* outer /* inner, x AS no */ still comment, y AS nope */ a AS yes FROM t") == ["yes"])
        #expect(labels("SELECT $q$ a, b AS no $q$ AS text, `tick` FROM t") == ["text", "tick"])
        #expect(labels(#"SELECT 1 AS "say ""hi""" FROM t"#) == [#"say "hi""#])
    }
}
