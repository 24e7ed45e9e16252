import Foundation
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
            let created = try await client.send(.post, path: "/pets", body: .form([URLQueryItem(name: "name", value: "Etag"), URLQueryItem(name: "species", value: "cat")]))
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
}
