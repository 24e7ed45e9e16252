import Foundation
import SpoutCore
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// GET endpoints run in read-only transactions (PostgreSQL) or on read-only connections
/// (SQLite), whatever their SQL says.
@Suite("GET endpoints are read-only")
struct ReadOnlyGetTests {
    static func endpoints(_ dialect: SQLDialect) -> String {
        let hiddenDelete: String
        switch dialect {
        case .postgres: hiddenDelete = "WITH gone AS (DELETE FROM pet RETURNING name) SELECT name FROM gone"
        case .sqlite: hiddenDelete = "DELETE FROM pet RETURNING name"
        }
        return """
            paths:
              /sneaky/insert:
                get:
                  sql: INSERT INTO pet (name, owner) VALUES ('Sneaky', 'Mallory') RETURNING name
              /sneaky/update:
                get:
                  sql: UPDATE pet SET owner = 'Mallory' RETURNING name
              /sneaky/delete:
                get:
                  sql: \(hiddenDelete)
              /sneaky/drop:
                get:
                  sql: DROP TABLE pet
                  result: scalar

            """
    }

    @Test("a GET endpoint whose SQL writes fails with a generic 500 and changes nothing",
          arguments: [SQLDialect.postgres, .sqlite])
    func writesRefused(dialect: SQLDialect) async throws {
        guard let database = try TestDatabases.make(dialect, prefix: "spout_rel_readonly") else { return }
        defer { database.drop() }
        try await onThread { try SampleData.seed(database.url, employees: 10) }
        let before = try await onThread { try SampleData.petsChecksum(database.url) }
        let directory = try ServiceDirectory(databaseURL: database.url, extraEndpoints: ["sneaky.yaml": Self.endpoints(dialect)], poolSize: 2)
        defer { directory.remove() }
        let service = try await InProcessServer.start(directory)

        for target in ["/sneaky/insert", "/sneaky/update", "/sneaky/delete", "/sneaky/drop"] {
            let response = try await service.get(target)
            #expect(response.status == 500, "\(target): \(response.status) \(response.text)")
            #expect(response.text == #"{"error":"internal server error"}"#, "\(target)")
            // The connection is fine afterwards.
            #expect(try await service.get("/pets/Fluffy").status == 200)
        }
        let after = try await onThread { try SampleData.petsChecksum(database.url) }
        #expect(after == before)
        await service.stop()
    }
}
