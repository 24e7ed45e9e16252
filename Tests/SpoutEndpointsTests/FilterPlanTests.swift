import Foundation
import SpoutCore
import SpoutEndpoints
import SpoutHTTP
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Optional filters (`(:lastName IS NULL OR last_name = :lastName)`) on the shipped employees
/// endpoints, on both databases: the statements Spout sends use the filter's index, and every
/// combination of filters answers the bytes the SQL as written answers.
///
/// The data: 20,000 employees made by SQL, with 2,000 last names of about 10 rows each,
/// `Common` on 200 rows (1 %), `Rare` on 20 rows, an empty last name on 20 rows, and
/// statistics gathered (`ANALYZE`).
@Suite("Optional filters: plans and bytes")
struct FilterPlanTests {
    static let employees = 20_000

    /// Rows made by a recursive CTE (the same rows on both databases).
    static func populate(_ dialect: SQLDialect) -> String {
        let hireDate = dialect == .postgres ? "DATE '1985-01-01' + (i % 5000)" : "date('1985-01-01', '+' || (i % 5000) || ' days')"
        let birthDate = dialect == .postgres ? "DATE '1960-01-01'" : "'1960-01-01'"
        return """
            INSERT INTO employees (emp_no, birth_date, first_name, last_name, gender, hire_date)
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(Self.employees))
            SELECT i, \(birthDate), 'F' || (i % 37),
                   CASE WHEN i % 1000 = 7 THEN 'Rare' WHEN i % 1000 = 9 THEN '' WHEN i % 100 = 3 THEN 'Common' ELSE 'L' || (i % 2000) END,
                   CASE WHEN i % 2 = 0 THEN 'M' ELSE 'F' END, \(hireDate)
            FROM n;
            ANALYZE;
            """
    }

    /// Runs `body` with a database of `dialect` holding the data above and the shipped
    /// endpoints.
    static func withEmployees(_ dialect: SQLDialect, _ body: (Database, EndpointSet) async throws -> Void) async throws {
        let temporary = dialect == .postgres ? try TestDatabases.makePostgresDatabase(prefix: "spout_t_filters") : TestDatabases.makeSQLiteDatabase()
        defer { temporary.drop() }
        let database = try temporary.open()
        defer { database.close() }
        let directory = Repository.sqlDirectory + "/schema/" + (dialect == .postgres ? "postgres" : "sqlite")
        try await onThread {
            try database.withConnection(readOnly: false) { connection in
                for file in ["employees.sql", "employees-indexes.sql"] {
                    try connection.executeScript(try String(contentsOfFile: directory + "/" + file, encoding: .utf8))
                }
                try connection.executeScript(Self.populate(dialect))
            }
        }
        try await body(database, try Repository.shippedEndpoints())
    }

    // MARK: Plans

    /// `Common`'s stream is the case `cursor_tuple_fraction = 1` decides on PostgreSQL: planned
    /// for a tenth of its rows (the default), walking `employees_pkey` in order and filtering
    /// looks cheaper than finding the 200 rows by name and sorting them.
    @Test(
        "a filtered stream and page find their rows through the last-name index",
        arguments: [SQLDialect.postgres, .sqlite],
        ["/employees?lastName=Rare", "/employees?lastName=Rare&pageSize=5", "/employees?lastName=Common"])
    func lastNameUsesItsIndex(dialect: SQLDialect, target: String) async throws {
        try await Self.withEmployees(dialect) { database, endpoints in
            let plan = try await endpoints.explain(.get, target, database: database)
            #expect(plan.contains { $0.contains("employees_last_name_idx") }, "\(plan.joined(separator: "\n"))")
            #expect(!plan.contains { $0.contains("IS NULL") }, "\(plan.joined(separator: "\n"))")
        }
    }

    @Test("an unfiltered stream reads the table in key order", arguments: [SQLDialect.postgres, .sqlite])
    func unfilteredReadsInKeyOrder(dialect: SQLDialect) async throws {
        try await Self.withEmployees(dialect) { database, endpoints in
            let plan = try await endpoints.explain(.get, "/employees", database: database)
            #expect(!plan.contains { $0.contains("employees_last_name_idx") }, "\(plan.joined(separator: "\n"))")
            #expect(!plan.contains { $0.contains("Sort") || $0.contains("TEMP B-TREE") }, "\(plan.joined(separator: "\n"))")
        }
    }

    @Test("explain names the request's mistakes", arguments: [SQLDialect.sqlite])
    func explainRefuses(dialect: SQLDialect) async throws {
        try await Self.withEmployees(dialect) { database, endpoints in
            await #expect(throws: ExplainError.self) { try await endpoints.explain(.get, "/nowhere", database: database) }
            // Refused before the endpoint runs: the pet table does not exist here.
            await #expect(throws: ExplainError.self) { try await endpoints.explain(.delete, "/pets/Fluffy", database: database) }
            await #expect {
                try await endpoints.explain(.get, "/employees?hiredAfter=soon", database: database)
            } throws: { error in
                (error as? ArgumentError)?.parameter == "hiredAfter"
            }
        }
    }

    @Test("startup names the optional filters no index serves", arguments: [SQLDialect.postgres, .sqlite])
    func unindexedFiltersAreNamed(dialect: SQLDialect) async throws {
        try await Self.withEmployees(dialect) { database, endpoints in
            let before = await endpoints.unindexedFilters(on: database).filter { $0.hasPrefix("GET /employees:") }
            #expect(before.isEmpty, "\(before)")
            try await onThread {
                try database.withConnection(readOnly: false) { try $0.executeScript("DROP INDEX employees_last_name_idx") }
            }
            let after = await endpoints.unindexedFilters(on: database).filter { $0.hasPrefix("GET /employees:") }
            #expect(after.count == 1, "\(after)")
            #expect(after.first?.contains(":lastName (") == true, "\(after)")
            #expect(after.first?.contains("employees/employees.sql") == true, "\(after)")
        }
    }

    /// Names spread evenly, more of them than PostgreSQL's default statistics keep (as in
    /// test_db and `spout generate`'s data): only the shipped schema's statistics target on the
    /// name columns tells PostgreSQL that `Rare` is rare. Without it `Rare` is estimated at an
    /// average name's 130 rows, and its page walks the primary key through the whole table.
    @Test("a page of a rare name among evenly spread names uses the name's index", arguments: [SQLDialect.postgres, .sqlite])
    func rareNameAmongEvenNames(dialect: SQLDialect) async throws {
        try await Self.withEmployees(dialect) { database, endpoints in
            try await onThread {
                try database.withConnection(readOnly: false) {
                    try $0.executeScript("UPDATE employees SET last_name = 'E' || (emp_no % 150) WHERE last_name <> 'Rare'; ANALYZE employees")
                }
            }
            let plan = try await endpoints.explain(.get, "/employees?lastName=Rare&pageSize=5", database: database)
            #expect(plan.contains { $0.contains("employees_last_name_idx") }, "\(plan.joined(separator: "\n"))")
        }
    }

    // MARK: Bytes

    /// Every combination of these filter values (nil: not sent).
    static let filterValues: [(name: String, values: [String?])] = [
        ("firstName", [nil, "F3", ""]),
        ("lastName", [nil, "L7", "Rare", "", "Nobody"]),
        ("hiredAfter", [nil, "1995-01-01", ""]),
        ("hiredBefore", [nil, "1997-06-30"]),
    ]

    static var combinations: [[(String, String)]] {
        var result: [[(String, String)]] = [[]]
        for (name, values) in Self.filterValues {
            result = result.flatMap { prefix in values.map { value in value.map { prefix + [(name, $0)] } ?? prefix } }
        }
        return result
    }

    @Test(
        "every combination of filters answers what the SQL as written answers, streamed and paged",
        arguments: [SQLDialect.postgres, .sqlite])
    func sameBytesAsWritten(dialect: SQLDialect) async throws {
        try await Self.withEmployees(dialect) { database, endpoints in
            let endpoint = try #require(endpoints.endpoints.first { $0.method == .get && $0.path == "/employees" })
            let service = try await InProcessServer.start(endpoints, database: database)
            let written = endpoint.sql.text(for: dialect)
            let firstPage = try KeysetQuery(written, key: ["employeeNumber"]).first
            var rowCounts = Set<Int>()
            for combination in Self.combinations {
                let query = combination.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
                let arguments = try ArgumentConversion.convert(RawArguments(combination), for: endpoint.parameters)
                let expected = try await onThread {
                    let sink = CollectingSink()
                    _ = try database.query(written, arguments).write(as: .json(), to: sink)
                    return sink.bytes
                }
                let streamed = try await service.get("/employees?" + query)
                #expect(streamed.status == 200, "\(query)")
                #expect(streamed.body == expected, "\(query)")
                rowCounts.insert(try #require(try JSONSerialization.jsonObject(with: Data(streamed.body)) as? [Any]).count)

                var limited = arguments
                limited[KeysetQuery.limitParameter] = .integer(6)
                let pageArguments = limited
                let expectedPage = try await onThread {
                    var stream = try database.query(firstPage, pageArguments)
                    stream.rowLimit = 5
                    stream.isLimitedBySQL = true
                    let sink = CollectingSink()
                    _ = try stream.write(as: .json(), to: sink)
                    return sink.bytes
                }
                let page = try await service.get("/employees?" + query + (query.isEmpty ? "" : "&") + "pageSize=5")
                #expect(page.status == 200, "\(query)")
                #expect(page.body == expectedPage, "\(query) (page)")
            }
            await service.stop()
            // The combinations cover empty, small and large results.
            #expect(rowCounts.contains(0))
            #expect(rowCounts.contains(Self.employees))
            #expect(rowCounts.contains { $0 > 0 && $0 < 100 })
        }
    }
}
