import Foundation
import SpoutCore
import SpoutEndpoints
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// The employees API on the same data loaded into PostgreSQL and SQLite (the test_db fixture,
/// and generated data for volume), served over real sockets by two servers.
@Suite("Employees API")
struct EmployeesAPITests {
    /// Every GET request compared across the databases (and the Accept header sent).
    static let requests: [(path: String, accept: String?)] = [
        ("/employees/10004", nil),
        ("/employees/10004?details=titles", nil),
        ("/employees/10004?details=salaries", nil),
        ("/employees/10004?details=titles&details=salaries", nil),
        ("/employees/10004?details=salaries&details=titles", nil),
        ("/employees/99999999", nil),
        ("/employees/abc", nil),
        ("/employees/10004?details=departments", nil),
        ("/employees/10004/titles", nil),
        ("/employees/10004/salaries", nil),
        ("/employees/10001/salaries", "application/x-ndjson"),
        ("/employees", nil),
        ("/employees", "application/x-ndjson"),
        ("/employees", "text/csv"),
        ("/employees?details=titles&details=salaries", nil),
        ("/employees?lastName=Facello", nil),
        ("/employees?firstName=Georgi&details=titles", nil),
        ("/employees?hiredAfter=1999-06-01&details=salaries", nil),
        ("/employees?hiredBefore=1985-02-05&lastName=Koblick", nil),
        ("/employees?hiredAfter=soon", nil),
        ("/departments", nil),
        ("/departments/d005/employees", nil),
        ("/departments/d009/employees?details=titles&details=salaries", nil),
        ("/departments/d999/employees", nil),
        ("/departments/d005", nil),
        ("/departments/d005?details=managers&details=employees", nil),
        ("/departments/d005?details=managers&details=managers.titles&details=employees&details=employees.titles&details=employees.salaries", nil),
        ("/departments/d005?details=employees&details=employees.salaries", "application/x-ndjson"),
        ("/departments/d010?details=employees&details=employees.titles", nil),
        ("/departments/d999?details=employees&details=employees.titles", nil),
        ("/departments/d005?details=employees.titles", nil),
        ("/departments/d005?details=employees&details=employees.titles", "text/csv"),
        ("/departments/d010/employees?details=titles", nil),
        ("/employees?lastName=M%C3%BCller", nil),
        ("/employees?lastName=O%27Brien", "text/csv"),
        ("/employees/10014/titles", nil),
        ("/employees/10014/titles", "text/csv"),
        ("/salaries", nil),
        ("/salaries", "text/csv"),
        ("/pets", nil),
        ("/pets?owner=Gwen", nil),
        ("/pets/Fluffy", nil),
        ("/pets/Fluffy?details=events", nil),
        ("/pets?details=events", "application/x-ndjson"),
        ("/owners?details=pets&details=pets.events", nil),
        ("/pets/Nobody", nil),
        ("/openapi.json", nil),
        ("/employees?api", nil),
        ("/departments/d005?api", nil),
    ]

    @Test(
        "every GET endpoint answers the same bytes from PostgreSQL and SQLite",
        .enabled(if: TestDatabases.postgresEnabled),
        arguments: [SampleData.fixture, .generated(employees: 2_500, seed: 7)])
    func sameBytes(data: SampleData) async throws {
        let postgres = try TestDatabases.makePostgresDatabase(prefix: "spout_t_endpoints")
        defer { postgres.drop() }
        let sqlite = TestDatabases.makeSQLiteDatabase()
        defer { sqlite.drop() }
        let loaded = try await onThread { try data.load(into: postgres) }
        #expect(try await onThread { try data.load(into: sqlite) } == loaded)

        let endpoints = try Repository.shippedEndpoints()
        let postgresDatabase = try postgres.open()
        defer { postgresDatabase.close() }
        let sqliteDatabase = try sqlite.open()
        defer { sqliteDatabase.close() }
        let postgresService = try await InProcessServer.start(endpoints, database: postgresDatabase)
        let sqliteService = try await InProcessServer.start(endpoints, database: sqliteDatabase)

        var bodies: [String: HTTPTestResponse] = [:]
        for (path, accept) in Self.requests {
            let fromPostgres = try await postgresService.get(path, accept: accept)
            let fromSQLite = try await sqliteService.get(path, accept: accept)
            #expect(fromPostgres.status == fromSQLite.status, "\(path)")
            #expect(fromPostgres.header("content-type") == fromSQLite.header("content-type"), "\(path)")
            #expect(fromPostgres.body == fromSQLite.body, "\(path) (Accept: \(accept ?? "-")) differs")
            bodies[path + " " + (accept ?? "")] = fromSQLite
        }
        await postgresService.stop()
        await sqliteService.stop()

        // The answers are right, not only equal.
        #expect(bodies["/employees/99999999 "]?.status == 404)
        #expect(bodies["/employees/abc "]?.status == 400)
        #expect(bodies["/employees/abc "]?.text == #"{"error":"invalid integer","parameter":"employeeNumber","value":"abc"}"#)
        #expect(bodies["/employees/10004?details=departments "]?.status == 400)
        #expect(bodies["/employees?hiredAfter=soon "]?.status == 400)
        #expect(bodies["/departments/d999/employees "]?.text == "[]")
        #expect(bodies["/departments/d999?details=employees&details=employees.titles "]?.status == 404)
        #expect(bodies["/departments/d005?details=employees.titles "]?.status == 400)
        #expect(bodies["/departments/d005?details=employees&details=employees.titles text/csv"]?.status == 406)
        #expect(bodies["/employees?api "]?.header("content-type") == "text/html; charset=utf-8")
        #expect(bodies["/departments/d005?api "]?.text.contains("<h2>/departments/{departmentNumber}/employees</h2>") == true)

        let employees = try #require(try bodies["/employees "]?.json() as? [[String: Any]])
        #expect(employees.count == loaded["employees"])
        #expect(employees.first?["employeeNumber"] as? Int == 10001)
        #expect(employees.first.map { Set($0.keys) } == ["employeeNumber", "firstName", "lastName", "hireDate"])
        let numbers = employees.compactMap { $0["employeeNumber"] as? Int }
        #expect(numbers == numbers.sorted())
        let lines = bodies["/employees application/x-ndjson"]?.text.split(separator: "\n") ?? []
        #expect(lines.count == loaded["employees"])
        let csvLines = bodies["/employees text/csv"]?.text.split(separator: "\r\n") ?? []
        #expect(csvLines.count == (loaded["employees"] ?? 0) + 1)
        let salaries = try #require(try bodies["/salaries "]?.json() as? [[String: Any]])
        #expect(salaries.count == loaded["salaries"])
        #expect(salaries.first.map { Set($0.keys) } == ["employeeNumber", "salary", "fromDate", "toDate"])
        let departments = try #require(try bodies["/departments "]?.json() as? [[String: Any]])
        #expect(departments.count == loaded["departments"])
        #expect(departments.first?["departmentNumber"] as? String == "d001")
        let withDetails = try #require(try bodies["/employees?details=titles&details=salaries "]?.json() as? [[String: Any]])
        #expect(withDetails.count == loaded["employees"])
        #expect(withDetails.reduce(0) { $0 + (($1["titles"] as? [Any])?.count ?? 0) } == loaded["titles"])
        #expect(withDetails.reduce(0) { $0 + (($1["salaries"] as? [Any])?.count ?? 0) } == loaded["salaries"])
        let recent = try #require(try bodies["/employees?hiredAfter=1999-06-01&details=salaries "]?.json() as? [[String: Any]])
        let june1999 = CivilTime.days(year: 1999, month: 6, day: 1) * 86_400_000
        #expect(!recent.isEmpty)
        #expect(recent.allSatisfy { ($0["hireDate"] as? Int64 ?? 0) > june1999 && $0["salaries"] is [Any] })

        guard case .fixture = data else { return }
        // The fixture's corners, through every encoder.
        #expect(bodies["/employees/10004 "]?.text == #"{"employeeNumber":10004,"firstName":"Chirstian","lastName":"Koblick"}"#)
        #expect(employees.last?["employeeNumber"] as? Int == 10014)
        let facello = try #require(try bodies["/employees?lastName=Facello "]?.json() as? [[String: Any]])
        #expect(facello.map { $0["firstName"] as? String } == ["Georgi"])
        #expect(bodies["/employees?lastName=M%C3%BCller "]?.text.contains(#""firstName":"Jürgen","lastName":"Müller""#) == true)
        #expect(bodies["/employees?lastName=O%27Brien text/csv"]?.text.contains("10013,Siobhan,O'Brien,") == true)
        #expect(bodies["/departments "]?.text.contains(#"{"departmentNumber":"d010","name":"Q\\A & \"Audit\""}"#) == true)
        let day = { (year: Int64, month: Int64, dayOfMonth: Int64) in CivilTime.days(year: year, month: month, day: dayOfMonth) * 86_400_000 }
        #expect(bodies["/employees/10014/titles "]?.text == #"[{"title":"Technique Leader","fromDate":\#(day(2000, 1, 28)),"toDate":null}]"#)
        #expect(bodies["/employees/10014/titles text/csv"]?.text == "title,fromDate,toDate\r\nTechnique Leader,\(day(2000, 1, 28)),\r\n")
        let d010 = try #require(try bodies["/departments/d010/employees?details=titles "]?.json() as? [[String: Any]])
        #expect(d010.map { $0["employeeNumber"] as? Int } == [10010])
        // The department tree holds the members endpoint's rows, details and all.
        let members = bodies["/departments/d010/employees?details=titles "]?.text ?? ""
        #expect(bodies["/departments/d010?details=employees&details=employees.titles "]?.text
            == #"{"departmentNumber":"d010","name":"Q\\A & \"Audit\"","employees":"# + members + "}")
    }

    @Test(
        "GET /employees/10004 with both details: 2 titles and 4 salaries, dates as epoch ms at UTC midnight")
    func employee10004() async throws {
        var backends = [TestDatabases.makeSQLiteDatabase()]
        if TestDatabases.postgresEnabled { backends.append(try TestDatabases.makePostgresDatabase(prefix: "spout_t_10004")) }
        defer { backends.forEach { $0.drop() } }
        for backend in backends {
            _ = try await onThread { try SampleData.fixture.load(into: backend) }
            let database = try backend.open()
            defer { database.close() }
            let service = try await InProcessServer.start(try Repository.shippedEndpoints(), database: database)
            let response = try await service.get("/employees/10004?details=titles&details=salaries")
            await service.stop()
            #expect(response.status == 200)
            let employee = try #require(try response.json() as? [String: Any])
            #expect(Array(employee.keys).sorted() == ["employeeNumber", "firstName", "lastName", "salaries", "titles"])
            let titles = try #require(employee["titles"] as? [[String: Any]])
            let salaries = try #require(employee["salaries"] as? [[String: Any]])
            #expect(titles.count == 2)
            #expect(salaries.count == 4)
            #expect(titles.map { $0["title"] as? String } == ["Engineer", "Senior Engineer"])
            #expect(titles.first?["fromDate"] as? Int64 == CivilTime.days(year: 1986, month: 12, day: 1) * 86_400_000)
            #expect(titles.last?["toDate"] as? Int64 == CivilTime.days(year: 9999, month: 1, day: 1) * 86_400_000)
            #expect(salaries.first?["salary"] as? Int == 40054)
            let dates = (titles + salaries).flatMap { [$0["fromDate"], $0["toDate"]] }.map { $0 as? Int64 }
            #expect(dates.count == 12)
            #expect(dates.allSatisfy { $0 != nil && $0! % 86_400_000 == 0 })
            let starts = salaries.compactMap { $0["fromDate"] as? Int64 }
            #expect(starts == starts.sorted())
            // The text keeps the keys in order: the row's columns, then the details as declared.
            let day = { (year: Int64, month: Int64, dayOfMonth: Int64) in CivilTime.days(year: year, month: month, day: dayOfMonth) * 86_400_000 }
            #expect(response.text.hasPrefix("""
                {"employeeNumber":10004,"firstName":"Chirstian","lastName":"Koblick","titles":[{"title":"Engineer",\
                "fromDate":\(day(1986, 12, 1)),"toDate":\(day(1995, 12, 1))},{"title":"Senior Engineer",\
                "fromDate":\(day(1995, 12, 1)),"toDate":\(day(9999, 1, 1))}],"salaries":[{"salary":40054,\
                "fromDate":\(day(1986, 12, 1)),"toDate":\(day(1987, 12, 1))}
                """))
        }
    }
}
