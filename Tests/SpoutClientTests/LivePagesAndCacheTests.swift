import Foundation
import HTTPTypes
import SpoutClient
import Testing

/// The client against the server's pages and entity tags (docs/endpoints.md, "Pages" and
/// "Caches"), through a real `spout serve` on the seeded SQLite default.
@Suite struct LivePagesAndCacheTests {
    struct Employee: Decodable, Equatable {
        var employeeNumber: Int
        var lastName: String
        var titles: [Title]
    }

    struct Title: Decodable, Equatable {
        var title: String
        var fromDate: Date
    }

    struct Pet: Decodable, Equatable {
        var name: String
        var species: String
    }

    @Test func allPagesFollowsLinkToTheSameRowsAsTheWholeStream() async throws {
        try await LiveSpout.with { server in
            let client = server.client()
            let filter = [URLQueryItem(name: "lastName", value: "Haddad"), URLQueryItem(name: "details", value: "titles")]
            var whole: [Employee] = []
            for try await employee in try await client.rows(Employee.self, path: "/employees", query: filter) {
                whole.append(employee)
            }
            var paged: [Employee] = []
            let pageQuery = filter + [URLQueryItem(name: "pageSize", value: "7")]
            for try await employee in try await client.rows(Employee.self, path: "/employees", query: pageQuery, allPages: true) {
                paged.append(employee)
            }
            #expect(whole.count > 14)
            #expect(paged == whole)
            // Without allPages, one page.
            var first: [Employee] = []
            for try await employee in try await client.rows(Employee.self, path: "/employees", query: pageQuery) {
                first.append(employee)
            }
            #expect(first == Array(whole.prefix(7)))
        }
    }

    @Test func theCacheRevalidatesWithTheServersETagsAndSeesWrites() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-client-live-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await LiveSpout.with { server in
            let client = server.client(SpoutClientConfiguration(cache: SpoutCacheConfiguration(directory: directory)))
            let writer = server.client(SpoutClientConfiguration(headers: try await LiveSpout.authorization(sub: "Diane")))
            // GET /pets: a weak ETag from its versionSql.
            var pets: [Pet] = []
            let firstPets = try await client.rows(Pet.self, path: "/pets")
            #expect(firstPets.source == .network)
            for try await pet in firstPets { pets.append(pet) }
            let again = try await client.rows(Pet.self, path: "/pets")
            #expect(again.source == .revalidated)
            var cached: [Pet] = []
            for try await pet in again { cached.append(pet) }
            #expect(cached == pets)
            // A write changes the version: the next GET is a full answer with the new pet.
            let created = try await writer.send(.post, path: "/pets", body: .form([URLQueryItem(name: "name", value: "Etag"), URLQueryItem(name: "species", value: "cat")]))
            #expect(created.status == 201)
            let afterWrite = try await client.rows(Pet.self, path: "/pets")
            #expect(afterWrite.source == .network)
            var fresh: [Pet] = []
            for try await pet in afterWrite { fresh.append(pet) }
            #expect(fresh.contains(Pet(name: "Etag", species: "cat")))
            // An object: a strong ETag, a digest of its body.
            let fluffy = try await client.objectResponse(Pet.self, path: "/pets/Fluffy")
            #expect(fluffy.source == .network)
            #expect(try await client.objectResponse(Pet.self, path: "/pets/Fluffy").source == .revalidated)
        }
    }

    struct Salary: Decodable {
        var employeeNumber: Int
        var salary: Int
    }

    struct Department: Decodable {
        var departmentNumber: String
    }

    /// Endpoints with a row limit: one cut while streamed (a trailer), one cut while sent whole
    /// (a header).
    static let limitedEndpoints = [
        "config/endpoints/limited.yaml": """
            paths:
              /limited/salaries:
                get:
                  sql: SELECT emp_no AS "employeeNumber", salary FROM salaries ORDER BY emp_no, from_date
                  rowLimit: 20000
              /limited/departments:
                get:
                  sql: SELECT dept_no AS "departmentNumber" FROM departments ORDER BY dept_no
                  rowLimit: 3
            """
    ]

    @Test func aCutByTheRowLimitIsReportedAfterTheRows() async throws {
        try await LiveSpout.with(extraFiles: Self.limitedEndpoints) { server in
            let client = server.client()
            let salaries = try await client.rows(Salary.self, path: "/limited/salaries")
            var count = 0
            for try await _ in salaries { count += 1 }
            #expect(count == 20_000)
            #expect(salaries.headers[.trailer] == "Spout-Truncated")
            #expect(salaries.isCutByRowLimit)

            let departments = try await client.rows(Department.self, path: "/limited/departments")
            var names: [String] = []
            for try await department in departments { names.append(department.departmentNumber) }
            #expect(names.count == 3)
            #expect(departments.isCutByRowLimit)

            let whole = try await client.rows(Department.self, path: "/departments")
            for try await _ in whole {}
            #expect(!whole.isCutByRowLimit)
        }
    }
}
