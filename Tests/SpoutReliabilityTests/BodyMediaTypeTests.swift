import SpoutCore
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// A write's body in a media type Spout does not read was ignored, so the request was answered
/// as if it had sent nothing ("missing required parameter"): the commonest mistake, JSON sent
/// with `curl -d` and no `Content-Type`, read as a form with one odd key.
@Suite("Bodies of other media types")
struct BodyMediaTypeTests {
    @Test("JSON sent as a form is a 400 that says so, another type a 415, +json types are JSON; nothing is stored by the refused ones")
    func namedInsteadOfIgnored() async throws {
        try await InProcessServer.withSeededSQLite { service, database in
            let before = try await onThread { try SampleData.petsChecksum(database.url) }
            let token = try await TestTokens.authorization(sub: "Gwen")
            func post(_ contentType: String, _ body: String) async throws -> HTTPTestResponse {
                try await RawHTTP.send(
                    port: service.port, RawHTTP.request("POST", "/pets", headers: [("Content-Type", contentType), token], body: Array(body.utf8)))
            }

            let curlDefault = try await post("application/x-www-form-urlencoded", #"{"name":"Rex"}"#)
            let plain = try await post("text/plain", #"{"name":"Rex"}"#)
            let after = try await onThread { try SampleData.petsChecksum(database.url) }
            let suffixed = try await post("application/vnd.api+json", #"{"name":"Rex"}"#)

            #expect(curlDefault.status == 400)
            #expect(curlDefault.text.contains("the body is JSON but was sent as application/x-www-form-urlencoded"), "\(curlDefault.text)")
            #expect(plain.status == 415)
            #expect(plain.text.contains("unsupported media type text/plain"), "\(plain.text)")
            #expect(after == before)
            #expect(suffixed.status == 201, "\(suffixed.status) \(suffixed.text)")
        }
    }
}
