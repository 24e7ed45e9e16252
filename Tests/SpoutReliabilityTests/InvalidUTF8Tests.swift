import Foundation
import SpoutCore
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Text that is not UTF-8, in query strings and bodies.
@Suite("Invalid UTF-8 input")
struct InvalidUTF8Tests {
    @Test("invalid UTF-8 (or a lone surrogate escape) in a query, a form or a JSON body is a 400 and stores nothing")
    func rejected() async throws {
        try await InProcessServer.withSeededSQLite { service, database in
            let before = try await onThread { try SampleData.petsChecksum(database.url) }

            let query = try await service.get("/pets?owner=%ff%fe")
            let form = try await RawHTTP.send(
                port: service.port,
                RawHTTP.request("POST", "/pets", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array("name=zz%ff%fe".utf8)))
            let json = try await RawHTTP.send(
                port: service.port,
                RawHTTP.request("POST", "/pets", headers: [("Content-Type", "application/json")], body: Array(#"{"name":"zz"#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8)))
            let surrogate = try await RawHTTP.send(
                port: service.port,
                RawHTTP.request("POST", "/pets", headers: [("Content-Type", "application/json")], body: Array(#"{"name":"zz\ud800"}"#.utf8)))
            let after = try await onThread { try SampleData.petsChecksum(database.url) }

            #expect(query.status == 400)
            #expect(form.status == 400)
            #expect(json.status == 400)
            #expect(surrogate.status == 400)
            #expect(query.text.contains(#""parameter":"owner""#))
            #expect(after == before)
        }
    }
}
