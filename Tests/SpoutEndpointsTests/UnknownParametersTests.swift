import Foundation
import SpoutEndpoints
import SpoutTestSupport
import Testing

/// A query-string key an endpoint does not have is a 400 naming it (`unknownParameters`,
/// docs/endpoints.md "Unknown parameters"), through sockets on SQLite and PostgreSQL.
@Suite("Unknown parameters")
struct UnknownParametersTests {
    /// The shipped employees endpoints and one that ignores unknown keys.
    static func endpoints(in directory: TemporaryDirectory) throws -> EndpointSet {
        let lenient = try directory.write("lenient.yaml", """
            paths:
              /lenient/employees/{employeeNumber}:
                get:
                  sql: SELECT emp_no AS "employeeNumber" FROM employees WHERE emp_no = :employeeNumber
                  result: object
                  unknownParameters: ignore
                  parameters:
                    - {name: employeeNumber, type: integer}
            """)
        let shipped = Repository.root.appendingPathComponent("config/endpoints/employees.yaml").path
        return try EndpointSet.load(files: [shipped, lenient], sqlDirectory: Repository.sqlDirectory, environment: [:])
    }

    @Test("a misspelled filter is a 400 naming it; declared, details, page and api keys are taken")
    func misspelledFilter() async throws {
        let directory = try TemporaryDirectory()
        try await PagesAndCachesTests.Services.with(data: .fixture, endpoints: try Self.endpoints(in: directory)) { services in
            for (name, service) in services.services {
                let misspelled = try await service.get("/employees?lastname=Facello")
                #expect(misspelled.status == 400, "\(name)")
                #expect(
                    misspelled.text
                        == #"{"error":"unknown parameter","parameter":"lastname","accepted":["firstName","lastName","hiredAfter","hiredBefore","details","pageSize","after"]}"#,
                    "\(name): \(misspelled.text)")
                // The first unknown key is named, whatever else the request carries.
                let mixed = try await service.get("/employees?lastName=Facello&hiredafter=1990-01-01&pageSize=2")
                #expect(mixed.status == 400 && mixed.text.contains(#""parameter":"hiredafter""#), "\(name): \(mixed.text)")
                // A path key is not a query parameter.
                let pathKey = try await service.get("/employees/10004?employeeNumber=10001")
                #expect(pathKey.status == 400 && pathKey.text.contains(#""parameter":"employeeNumber""#), "\(name): \(pathKey.text)")
                #expect(pathKey.text.contains(#""accepted":["details"]"#), "\(name): \(pathKey.text)")

                let filtered = try await service.get("/employees?lastName=Facello&details=titles&pageSize=2")
                #expect(filtered.status == 200, "\(name): \(filtered.text)")
                let rows = try #require(try filtered.json() as? [[String: Any]])
                #expect(!rows.isEmpty && rows.allSatisfy { $0["lastName"] as? String == "Facello" })
                if let next = PagesAndCachesTests.nextLink(filtered) {
                    #expect(try await service.get(next).status == 200, "\(name): \(next)")
                }
                #expect(try await service.get("/employees?api").status == 200)
                #expect(try await service.get("/employees/10004?details=titles&api").status == 200)

                let ignored = try await service.get("/lenient/employees/10004?_=1700000000&whatever")
                #expect(ignored.status == 200 && ignored.text == #"{"employeeNumber":10004}"#, "\(name): \(ignored.text)")
            }
        }
    }

    @Test("unknownParameters takes refuse or ignore")
    func values() throws {
        let error = try EndpointValidationTests.Fixture().error("""
            paths:
              /x:
                get:
                  sql: SELECT 1 AS one
                  unknownParameters: warn
            """)
        #expect(error?.line == 5)
        #expect(error?.message == "unknown value 'warn' of 'unknownParameters' (known: refuse, ignore)")
    }
}
