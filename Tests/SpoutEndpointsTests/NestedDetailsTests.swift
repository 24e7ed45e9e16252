import Foundation
import SpoutCore
import SpoutEndpoints
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Details of details on the shipped employees API (`GET /departments/{departmentNumber}` with
/// its managers and employees, and their titles and salaries), over real sockets, on
/// PostgreSQL and SQLite. The PostgreSQL gate is per case: without PostgreSQL the SQLite case
/// still runs.
@Suite("Details of details")
struct NestedDetailsTests {
    /// Every detail of a department, two levels deep.
    static let everything =
        "/departments/d005?details=managers&details=managers.titles&details=employees&details=employees.titles"
        + "&details=employees.salaries"

    /// Serves the shipped endpoints on `dialect` with 2,500 generated
    /// employees, attachments fetched in windows of 100 rows.
    static func withService(_ dialect: SQLDialect, _ body: (InProcessServer, Database) async throws -> Void) async throws {
        let temporary = dialect == .postgres ? try TestDatabases.makePostgresDatabase(prefix: "spout_t_nested") : TestDatabases.makeSQLiteDatabase()
        defer { temporary.drop() }
        _ = try await onThread { try SampleData.generated(employees: 2_500, seed: 7).load(into: temporary) }
        let database = try temporary.open(DatabaseConfiguration(attachmentBatchSize: 100))
        defer { database.close() }
        try await InProcessServer.serving(try Repository.shippedEndpoints(), database: database) { try await body($0, database) }
    }

    /// The JSON value of `text`, compared as Foundation objects.
    static func value(_ text: String) throws -> NSObject {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) as? NSObject)
    }

    @Test(
        "a department tree is what per-parent requests return, in statements that grow with levels × windows",
        arguments: SQLDialect.allCases)
    func departmentTree(_ dialect: SQLDialect) async throws {
        guard dialect == .sqlite || TestDatabases.postgresEnabled else { return }
        try await Self.withService(dialect) { service, database in
            let before = database.statistics.statementCount
            let response = try await service.get(Self.everything)
            let statements = database.statistics.statementCount - before
            #expect(response.status == 200)
            #expect(response.header("content-type") == "application/json")
            let department = try #require(try response.json() as? [String: Any])
            #expect(department["departmentNumber"] as? String == "d005")
            // The department's columns, then its details as declared.
            #expect(response.text.hasPrefix(#"{"departmentNumber":"d005","name":"Development","managers":[{"#))

            // The employees are the department's members endpoint with one level of details, byte for byte.
            let members = try await service.get("/departments/d005/employees?details=titles&details=salaries")
            #expect(members.status == 200)
            #expect(response.text.hasSuffix(#","employees":"# + members.text + "}"))

            // Each employee's and manager's arrays are what that employee's own endpoints answer.
            let employees = try #require(department["employees"] as? [[String: Any]])
            let managers = try #require(department["managers"] as? [[String: Any]])
            #expect(employees.count > 200, "several windows of 100")
            #expect(!managers.isEmpty)
            let numbers = employees.compactMap { $0["employeeNumber"] as? Int }
            #expect(numbers == numbers.sorted() && numbers.count == employees.count)
            for employee in employees + managers {
                let number = try #require(employee["employeeNumber"] as? Int)
                let titles = try await service.get("/employees/\(number)/titles")
                #expect(employee["titles"] as? NSObject == (try Self.value(titles.text)), "titles of \(number)")
                if let salaries = employee["salaries"] {
                    let own = try await service.get("/employees/\(number)/salaries")
                    #expect(salaries as? NSObject == (try Self.value(own.text)), "salaries of \(number)")
                } else {
                    #expect(managers.contains { $0["employeeNumber"] as? Int == number }, "only managers have no salaries")
                }
            }

            // No statement per row at any level on PostgreSQL: the department, each array's
            // cursor, and per window of 100 parents one statement per detail below them.
            // (Counted before the per-employee requests above.)
            let windows = { (rows: Int) in (rows + 99) / 100 }
            if dialect == .postgres {
                #expect(statements == 1 + (1 + windows(managers.count)) + (1 + 2 * windows(employees.count)))
            } else {
                // SQLite runs a cached statement per parent, in process (no round trip).
                #expect(statements == 1 + (1 + managers.count) + (1 + 2 * employees.count))
            }
        }
    }

    @Test("JSON Lines nests the same arrays; CSV is a 406 naming the detail", arguments: SQLDialect.allCases)
    func formats(_ dialect: SQLDialect) async throws {
        guard dialect == .sqlite || TestDatabases.postgresEnabled else { return }
        try await Self.withService(dialect) { service, _ in
            let compact = try await service.get(Self.everything)
            let lines = try await service.get(Self.everything, accept: "application/x-ndjson")
            #expect(lines.status == 200)
            #expect(lines.text == compact.text + "\n")
            let csv = try await service.get(Self.everything, accept: "text/csv")
            #expect(csv.status == 406)
            #expect(csv.text == """
                {"error":"details are arrays, which CSV cannot hold: ask for JSON or JSON Lines, or leave out the detail",\
                "parameter":"details","value":"employees"}
                """)
            // Without details, CSV is fine.
            #expect(try await service.get("/departments/d005", accept: "text/csv").status == 200)
        }
    }

    @Test("an unknown name lists what its level allows; a detail without its parent is refused", arguments: SQLDialect.allCases)
    func refusedPaths(_ dialect: SQLDialect) async throws {
        guard dialect == .sqlite || TestDatabases.postgresEnabled else { return }
        try await Self.withService(dialect) { service, database in
            let before = database.statistics.statementCount
            let cases: [(String, String)] = [
                (
                    "/departments/d005?details=staff",
                    #"{"error":"value not allowed","parameter":"details","value":"staff","allowed":["managers","employees"]}"#
                ),
                (
                    "/departments/d005?details=employees&details=employees.title",
                    #"{"error":"value not allowed","parameter":"details","value":"employees.title","allowed":["employees.titles","employees.salaries"]}"#
                ),
                (
                    "/departments/d005?details=employees&details=employees.titles&details=employees.titles.x",
                    #"{"error":"value not allowed","parameter":"details","value":"employees.titles.x","allowed":[]}"#
                ),
                (
                    "/departments/d005?details=employees.titles",
                    #"{"error":"detail 'employees.titles' needs its parent: add details=employees","parameter":"details","value":"employees.titles"}"#
                ),
                (
                    "/departments/d005/employees?details=titles.x",
                    #"{"error":"value not allowed","parameter":"details","value":"titles.x","allowed":[]}"#
                ),
            ]
            // Twice: a refused selection is never remembered as checked.
            for _ in 1...2 {
                for (path, body) in cases {
                    let response = try await service.get(path)
                    #expect(response.status == 400, "\(path)")
                    #expect(response.text == body, "\(path)")
                }
            }
            #expect(database.statistics.statementCount == before, "refused before any SQL runs")
            // A selection checked once is remembered and answers the same; a list longer than
            // what is remembered (paths repeated) is checked every time and answers alike.
            let selected = "/departments/d005?details=employees&details=employees.titles"
            let first = try await service.get(selected)
            let again = try await service.get(selected)
            #expect(first.status == 200 && again.status == 200 && first.text == again.text)
            let repeated = "/departments/d005?" + Array(repeating: "details=employees", count: 17).joined(separator: "&") + "&details=employees.titles"
            #expect(try await service.get(repeated).text == first.text)
            #expect(try await service.get("/departments/d005?" + Array(repeating: "details=employees", count: 17).joined(separator: "&")
                + "&details=employees.title").status == 400)
            // An unknown department is a 404, details or not.
            #expect(try await service.get("/departments/d999?details=employees&details=employees.titles").status == 404)
            #expect(try await service.get("/departments/d999?details=employees").status == 404)
        }
    }

    @Test("pages carry their rows' details; a department with one level of details keeps its strong ETag",
          arguments: SQLDialect.allCases)
    func pagesAndTags(_ dialect: SQLDialect) async throws {
        guard dialect == .sqlite || TestDatabases.postgresEnabled else { return }
        try await Self.withService(dialect) { service, _ in
            let page = try await service.get("/departments/d005/employees?pageSize=3&details=titles")
            #expect(page.status == 200)
            #expect(page.header("etag")?.hasPrefix("\"") == true)
            let rows = try #require(try page.json() as? [[String: Any]])
            #expect(rows.count == 3 && rows.allSatisfy { $0["titles"] is [Any] })
            let flat = try await service.get("/departments/d005?details=managers")
            #expect(flat.header("etag") != nil)
            let deep = try await service.get("/departments/d005?details=managers&details=managers.titles")
            #expect(deep.header("etag") == nil, "streamed: no body digest")
            #expect(try Self.value(deep.text) != (try Self.value(flat.text)))
            let documentation = try await service.get("/departments/d005?api")
            #expect(documentation.text.contains("with an <code>ETag</code> (streamed, without it, when details of details are selected)"))
            #expect(documentation.text.contains("<li><code>employees.salaries</code>: an array of <code>{salary, fromDate, toDate}</code>"))
        }
    }

    /// Departments paged three at a time, each with its employees and their titles; the
    /// department object with the same two levels and a `versionSql`.
    static let pagedTree = """
        paths:
          /departments:
            get:
              sqlFile: employees/departments.sql
              page: {key: [departmentNumber], size: 3, maxSize: 10}
              details: &members
                - name: employees
                  sqlFile: employees/department-employees.sql
                  details:
                    - name: titles
                      sqlFile: employees/titles.sql
          /departments/{departmentNumber}:
            get:
              sqlFile: employees/department.sql
              result: object
              versionSql: SELECT count(*) FROM titles
              parameters:
                - name: departmentNumber
                  type: string
              details: *members
        """

    @Test("pages of a top level carry two levels of details each, tagged, and join to the unpaged stream; versionSql tags a streamed object",
          arguments: SQLDialect.allCases)
    func pagedTree(_ dialect: SQLDialect) async throws {
        guard dialect == .sqlite || TestDatabases.postgresEnabled else { return }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-paged-tree-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("tree.yaml").path
        try Self.pagedTree.write(toFile: file, atomically: true, encoding: .utf8)
        let endpoints = try EndpointSet.load(files: [file], sqlDirectory: Repository.sqlDirectory, environment: [:])

        let temporary = dialect == .postgres ? try TestDatabases.makePostgresDatabase(prefix: "spout_t_ptree") : TestDatabases.makeSQLiteDatabase()
        defer { temporary.drop() }
        _ = try await onThread { try SampleData.generated(employees: 600, seed: 11).load(into: temporary) }
        let database = try temporary.open(DatabaseConfiguration(attachmentBatchSize: 100))
        defer { database.close() }
        try await InProcessServer.serving(endpoints, database: database) { service in
            let details = "details=employees&details=employees.titles"
            let whole = try await service.get("/departments?\(details)")
            #expect(whole.status == 200)
            let everything = try #require(try whole.json() as? [[String: Any]])
            #expect(everything.count > 6, "more than two pages of departments")

            // Follow the pages: each is read whole with a strong ETag that a 304 confirms, and
            // each row carries both levels.
            var rows: [[String: Any]] = []
            var next: String? = "/departments?pageSize=3&\(details)"
            var pages = 0
            while let target = next {
                let before = database.statistics.statementCount
                let page = try await service.get(target)
                let statements = database.statistics.statementCount - before
                #expect(page.status == 200, "\(target)")
                let pageRows = try #require(try page.json() as? [[String: Any]])
                #expect(pageRows.count <= 3)
                #expect(pageRows.allSatisfy { ($0["employees"] as? [[String: Any]])?.allSatisfy { $0["titles"] is [Any] } == true })
                let members = pageRows.reduce(0) { $0 + (($1["employees"] as? [Any])?.count ?? 0) }
                if dialect == .postgres && pages > 0 {
                    // The page, its rows' employees (one window), their titles per window of 100
                    // (the first page also reads the cursor keys, once: InstanceKeys).
                    #expect(statements == 1 + 1 + (members + 99) / 100, "\(target)")
                }
                let tag = try #require(page.header("etag"), "\(target)")
                #expect(tag.hasPrefix("\""), "a strong ETag")
                let again = try await RawHTTP.get(port: service.port, target, headers: [("If-None-Match", tag)])
                #expect(again.status == 304 && again.body.isEmpty, "\(target)")
                rows += pageRows
                pages += 1
                next = PagesAndCachesTests.nextLink(page)
            }
            #expect(pages == (everything.count + 2) / 3)
            #expect(NSArray(array: rows).isEqual(to: everything), "the pages joined are the unpaged stream")

            // The object with details of details streams (no body digest), and its versionSql
            // still makes a weak ETag that If-None-Match confirms without reading the rows.
            let object = try await service.get("/departments/d005?\(details)")
            #expect(object.status == 200)
            let tag = try #require(object.header("etag"), "versionSql tags the streamed object")
            #expect(tag.hasPrefix("W/"))
            let before = database.statistics.statementCount
            let confirmed = try await RawHTTP.get(port: service.port, "/departments/d005?\(details)", headers: [("If-None-Match", tag)])
            #expect(confirmed.status == 304 && confirmed.body.isEmpty)
            #expect(database.statistics.statementCount - before <= 1, "only versionSql ran")
        }
    }

    @Test("maxDetailDepth bounds how deep an endpoint file may nest details")
    func depthLimit() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-nested-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("nested.yaml").path
        try """
            paths:
              /a:
                get:
                  sql: SELECT 1 AS one
                  details:
                    - name: b
                      sql: SELECT :one AS two
                      details:
                        - name: c
                          sql: SELECT :two AS three
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let loaded = try EndpointSet.load(files: [file], sqlDirectory: directory.path, maxDetailDepth: 2, environment: [:])
        let parameter = try #require(loaded.endpoints.first?.parameters.first { $0.name == "details" })
        #expect(parameter.allowedValues == [.text("b"), .text("b.c")])
        do {
            _ = try EndpointSet.load(files: [file], sqlDirectory: directory.path, maxDetailDepth: 1, environment: [:])
            Issue.record("details two levels deep loaded with maxDetailDepth 1")
        } catch {
            #expect(error.message == "details nest 2 levels deep here; maxDetailDepth allows 1 (see docs/configuration.md)")
            #expect(error.line == 9)
        }
    }
}
