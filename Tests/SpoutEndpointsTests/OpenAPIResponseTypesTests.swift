import Foundation
import SpoutCore
import SpoutEndpoints
import SpoutTestDatabases
import SpoutTestSupport
import Testing

/// The OpenAPI document's response properties carry the types the database described when the
/// start prepared the statements, details included, on both databases; dates follow
/// `dateFormat`.
@Suite("OpenAPI response types")
struct OpenAPIResponseTypesTests {
    @Test("response properties are typed from the database, at every depth", arguments: SQLDialect.allCases)
    func typedProperties(_ dialect: SQLDialect) async throws {
        guard let temporary = try TestDatabases.make(dialect, prefix: "spout_t_openapi") else { return }
        defer { temporary.drop() }
        _ = try await onThread { try SampleData.fixture.load(into: temporary) }
        let database = try temporary.open()
        defer { database.close() }
        var endpoints = try Repository.shippedEndpoints()
        let check = try await endpoints.statementCheck(on: database)
        #expect(check.problems.isEmpty, "\(check.problems)")
        endpoints.resultColumns = check.resultColumns

        let employee = try Self.properties(endpoints.openAPIDocument(), path: "/employees/{employeeNumber}")
        #expect(Self.types(employee["employeeNumber"]) == ["integer", "null"])
        #expect(Self.types(employee["firstName"]) == ["string", "null"])
        #expect(Self.types(employee["lastName"]) == ["string", "null"])
        let titles = try #require((employee["titles"]?["items"] as? [String: Any])?["properties"] as? [String: [String: Any]])
        #expect(Self.types(titles["title"]) == ["string", "null"])
        #expect(Self.types(titles["fromDate"]) == ["integer", "null"])

        // Two levels down: an owner's pets' events.
        let owners = try Self.properties(endpoints.openAPIDocument(), path: "/owners", itemsOfArray: true)
        let pets = try #require((owners["pets"]?["items"] as? [String: Any])?["properties"] as? [String: [String: Any]])
        #expect(Self.types(pets["birth"]) == ["integer", "null"])
        let events = try #require((pets["events"]?["items"] as? [String: Any])?["properties"] as? [String: [String: Any]])
        #expect(Self.types(events["date"]) == ["integer", "null"])
        #expect(Self.types(events["remark"]) == ["string", "null"])

        // ISO-8601 dates are strings.
        let iso = try Self.properties(endpoints.openAPIDocument(dateFormat: .iso8601), path: "/employees/{employeeNumber}")
        let isoTitles = try #require((iso["titles"]?["items"] as? [String: Any])?["properties"] as? [String: [String: Any]])
        #expect(Self.types(isoTitles["fromDate"]) == ["string", "null"] && isoTitles["fromDate"]?["format"] as? String == "date")
    }

    @Test("spout serve types its /openapi.json from its start's check")
    func servedDocumentIsTyped() async throws {
        let served = try await ServedSpout.start(root: TestFixtures.repositoryRoot)
        let answer: HTTPTestResponse
        do {
            answer = try await RawHTTP.get(port: served.port, "/openapi.json")
        } catch {
            await served.stop()
            throw error
        }
        await served.stop()
        #expect(answer.status == 200)
        let employee = try Self.properties(answer.body, path: "/employees/{employeeNumber}")
        #expect(Self.types(employee["employeeNumber"]) == ["integer", "null"], "\(employee)")
        #expect(Self.types(employee["lastName"]) == ["string", "null"], "\(employee)")
    }

    // MARK: Helpers

    /// The 200 response's row properties of GET `path`.
    static func properties(_ document: [UInt8], path: String, itemsOfArray: Bool = false) throws -> [String: [String: Any]] {
        let root = try #require(try JSONSerialization.jsonObject(with: Data(document)) as? [String: Any])
        let paths = try #require(root["paths"] as? [String: [String: Any]])
        let get = try #require(paths[path]?["get"] as? [String: Any])
        let ok = try #require((get["responses"] as? [String: Any])?["200"] as? [String: Any])
        let content = try #require(ok["content"] as? [String: Any])
        var schema = try #require((content["application/json"] as? [String: Any])?["schema"] as? [String: Any])
        if itemsOfArray { schema = try #require(schema["items"] as? [String: Any]) }
        return try #require(schema["properties"] as? [String: [String: Any]])
    }

    static func types(_ property: [String: Any]?) -> [String] {
        property?["type"] as? [String] ?? []
    }
}
