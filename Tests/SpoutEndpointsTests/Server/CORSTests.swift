import Foundation
import HTTPTypes
import SpoutCore
import SpoutHTTP
import SpoutTestSupport
import Testing

/// CORS through real sockets: simple requests, preflights and streamed responses, against a
/// server on port 0 over SQLite.
@Suite("CORS", .serialized)
struct CORSTests {
    static let app = "https://app.example.com"

    /// Runs `body` with a server whose CORS policy is `cors`.
    func withServer(_ cors: CORSPolicy, _ body: (ServerFixture) async throws -> Void) async throws {
        try await ServerFixture.withSQLite(
            ServerConfiguration(host: "127.0.0.1", port: 0, cors: cors), database: DatabaseConfiguration(maximumConnections: 2), body)
    }

    static func preflight(_ origin: String?, method: String = "GET") -> [(String, String)] {
        var headers = [("Access-Control-Request-Method", method), ("Access-Control-Request-Headers", "authorization")]
        if let origin { headers.append(("Origin", origin)) }
        return headers
    }

    @Test("an allowed origin gets itself back with Vary and the exposed request id; others get nothing")
    func simpleRequests() async throws {
        try await self.withServer(CORSPolicy(allowedOrigins: [Self.app, "http://localhost:3000"])) { fixture in
            let allowed = try await HTTPTestConnection.get(port: fixture.port, "/employees?limit=1", headers: [("Origin", Self.app)])
            #expect(allowed.status == 200)
            #expect(allowed.header("Access-Control-Allow-Origin") == Self.app)
            #expect(allowed.header("Access-Control-Expose-Headers") == "X-Request-Id, traceresponse")
            #expect(allowed.header("Vary")?.contains("Origin") == true)
            #expect(allowed.header("Access-Control-Allow-Credentials") == nil)

            let port = try await HTTPTestConnection.get(port: fixture.port, "/employees/count", headers: [("Origin", "http://localhost:3000")])
            #expect(port.header("Access-Control-Allow-Origin") == "http://localhost:3000")

            let upper = try await HTTPTestConnection.get(port: fixture.port, "/employees/count", headers: [("Origin", "HTTPS://APP.EXAMPLE.COM")])
            #expect(upper.header("Access-Control-Allow-Origin") == "HTTPS://APP.EXAMPLE.COM")

            for origin in ["https://evil.example.com", "https://app.example.com.evil.net", "http://app.example.com", "null"] {
                let refused = try await HTTPTestConnection.get(port: fixture.port, "/employees/count", headers: [("Origin", origin)])
                #expect(refused.status == 200, "\(origin)")
                #expect(refused.header("Access-Control-Allow-Origin") == nil, "\(origin)")
                #expect(refused.header("Access-Control-Expose-Headers") == nil, "\(origin)")
                #expect(refused.header("Vary")?.contains("Origin") == true, "\(origin)")
            }

            let none = try await HTTPTestConnection.get(port: fixture.port, "/employees/count")
            #expect(none.header("Access-Control-Allow-Origin") == nil)
            #expect(none.header("Vary")?.contains("Origin") == true)

            // Errors carry the headers too, so the page can read them.
            let missing = try await HTTPTestConnection.get(port: fixture.port, "/employees/999", headers: [("Origin", Self.app)])
            #expect(missing.status == 404)
            #expect(missing.header("Access-Control-Allow-Origin") == Self.app)
        }
    }

    @Test("* allows every origin without Vary")
    func anyOrigin() async throws {
        try await self.withServer(CORSPolicy(allowedOrigins: ["*"])) { fixture in
            let response = try await HTTPTestConnection.get(port: fixture.port, "/employees/count", headers: [("Origin", "https://anyone.example")])
            #expect(response.header("Access-Control-Allow-Origin") == "*")
            #expect(response.header("Access-Control-Expose-Headers") == "X-Request-Id, traceresponse")
            #expect(response.header("Vary") == nil)
            let noOrigin = try await HTTPTestConnection.get(port: fixture.port, "/employees/count")
            #expect(noOrigin.header("Access-Control-Allow-Origin") == "*")

            let preflight = try await HTTPTestConnection.get(
                port: fixture.port, "/employees", method: "OPTIONS", headers: Self.preflight("https://anyone.example", method: "POST"))
            #expect(preflight.status == 204)
            #expect(preflight.header("Access-Control-Allow-Origin") == "*")
        }
    }

    @Test("preflights: 204 with the path's methods, 403 for other origins, 404 for unknown paths")
    func preflights() async throws {
        let cors = CORSPolicy(allowedOrigins: [Self.app], allowedHeaders: ["Content-Type", "Authorization"], maxAgeSeconds: 120)
        try await self.withServer(cors) { fixture in
            let client = try await HTTPTestConnection.connect(port: fixture.port)
            let item = try await client.request("OPTIONS", "/employees/7", headers: Self.preflight(Self.app, method: "DELETE"))
            #expect(item.status == 204)
            #expect(item.body.isEmpty)
            #expect(item.header("Access-Control-Allow-Origin") == Self.app)
            #expect(item.header("Access-Control-Allow-Methods") == "DELETE, GET, HEAD")
            #expect(item.header("Access-Control-Allow-Headers") == "Content-Type, Authorization")
            #expect(item.header("Access-Control-Max-Age") == "120")
            #expect(item.header("Vary")?.contains("Origin") == true)
            #expect(item.header("Content-Length") == nil)

            // The same connection goes on (keep-alive after a preflight).
            let collection = try await client.request("OPTIONS", "/employees", headers: Self.preflight(Self.app, method: "POST"))
            #expect(collection.status == 204)
            #expect(collection.header("Access-Control-Allow-Methods") == "GET, HEAD, POST")
            let actual = try await client.request("GET", "/employees/count", headers: [("Origin", Self.app)])
            #expect(actual.status == 200)
            #expect(actual.text == "50")

            let foreign = try await HTTPTestConnection.get(
                port: fixture.port, "/employees", method: "OPTIONS", headers: Self.preflight("https://evil.example.com"))
            #expect(foreign.status == 403)
            #expect(foreign.header("Content-Type") == "application/json")
            #expect(foreign.text == #"{"error":"origin not allowed"}"#)
            #expect(foreign.header("Access-Control-Allow-Origin") == nil)
            #expect(foreign.header("Access-Control-Allow-Methods") == nil)

            let anonymous = try await HTTPTestConnection.get(port: fixture.port, "/employees", method: "OPTIONS", headers: Self.preflight(nil))
            #expect(anonymous.status == 403)

            let unknown = try await HTTPTestConnection.get(
                port: fixture.port, "/nothing/here", method: "OPTIONS", headers: Self.preflight(Self.app))
            #expect(unknown.status == 404)
            #expect(unknown.text == #"{"error":"not found"}"#)

            // OPTIONS without Access-Control-Request-Method is no preflight: routed as usual.
            let plain = try await HTTPTestConnection.get(port: fixture.port, "/employees", method: "OPTIONS", headers: [("Origin", Self.app)])
            #expect(plain.status == 405)
            #expect(plain.header("Access-Control-Allow-Origin") == Self.app)
        }
    }

    @Test("streamed (chunked) responses carry the CORS headers, compressed or not")
    func streamedResponses() async throws {
        try await self.withServer(CORSPolicy(allowedOrigins: [Self.app])) { fixture in
            let plain = try await HTTPTestConnection.get(port: fixture.port, "/big?count=20000", headers: [("Origin", Self.app)])
            #expect(plain.status == 200)
            #expect(plain.isChunked && plain.isComplete)
            #expect(plain.header("Access-Control-Allow-Origin") == Self.app)
            #expect(plain.header("Access-Control-Expose-Headers") == "X-Request-Id, traceresponse")
            #expect(plain.header("Vary")?.contains("Origin") == true)

            let gzipped = try await HTTPTestConnection.get(
                port: fixture.port, "/big?count=20000", headers: [("Origin", Self.app), ("Accept-Encoding", "gzip")])
            #expect(gzipped.isChunked && gzipped.isComplete)
            #expect(gzipped.header("Content-Encoding") == "gzip")
            #expect(gzipped.header("Access-Control-Allow-Origin") == Self.app)
            #expect(try gunzip(gzipped.body) == plain.body)

            let head = try await HTTPTestConnection.get(port: fixture.port, "/big?count=20000", method: "HEAD", headers: [("Origin", Self.app)])
            #expect(head.header("Transfer-Encoding") == "chunked")
            #expect(head.header("Access-Control-Allow-Origin") == Self.app)
        }
    }

    @Test("with CORS off (the default) nothing changes: no headers, OPTIONS is a 405")
    func off() async throws {
        try await self.withServer(CORSPolicy()) { fixture in
            let response = try await HTTPTestConnection.get(port: fixture.port, "/employees/count", headers: [("Origin", Self.app)])
            #expect(response.header("Access-Control-Allow-Origin") == nil)
            #expect(response.header("Vary") == nil)
            let preflight = try await HTTPTestConnection.get(
                port: fixture.port, "/employees", method: "OPTIONS", headers: Self.preflight(Self.app))
            #expect(preflight.status == 405)
            #expect(preflight.header("Access-Control-Allow-Origin") == nil)
        }
    }

    @Test("the policy's values for each kind of origin")
    func policy() {
        let policy = CORSPolicy(allowedOrigins: [Self.app])
        #expect(policy.isEnabled && !policy.allowsAnyOrigin)
        #expect(policy.allowOrigin(for: Self.app) == Self.app)
        #expect(policy.allowOrigin(for: Self.app + "/") == nil)
        #expect(policy.allowOrigin(for: nil) == nil)
        #expect(CORSPolicy().responseHeaders(origin: Self.app).count == 0)
        #expect(CORSPolicy().allowedHeaders == [
            "Content-Type", "Authorization", "X-API-Key", "X-Request-Id", "Accept", "Accept-Encoding", "traceparent", "tracestate",
        ])
        #expect(CORSPolicy().maxAgeSeconds == 600)
        let methods = policy.preflightHeaders(methods: [.get, .head])
        #expect(methods[.accessControlAllowMethods] == "GET, HEAD")
        #expect(methods[.accessControlMaxAge] == "600")
    }
}
