import Foundation
import SpoutCore
@testable import SpoutEndpoints
import SpoutTestSupport
import Testing

/// `auth` per endpoint and method (docs/endpoints.md, "Per endpoint"): an endpoint's own
/// `auth` replaces its file's for it alone, `auth: none` opens one endpoint of a guarded file,
/// on both databases through real sockets.
@Suite("auth per endpoint")
struct EndpointAuthTests {
    /// Every endpoint needs a token, except the open list; only librarians add; deleting
    /// takes any token (the file's `auth`).
    static let libraryFile = """
        auth: {token: jwt}
        paths:
          /books:
            get:
              auth: none
              sql: SELECT 'open' AS answer
              result: object
            post:
              auth: {token: jwt, roles: [librarian]}
              sql: SELECT 'added' AS answer, CAST(:claims.sub AS text) AS sub
              result: object
          /books/{id}:
            delete:
              sql: SELECT 'deleted' AS answer, CAST(:claims.sub AS text) AS sub
              result: object
              parameters:
                - {name: id, type: integer}
        """

    @Test("an endpoint's own auth replaces the file's; auth: none opens one endpoint", arguments: PetsAPITests.backends)
    func ownAuth(_ backend: SQLDialect) async throws {
        try await IdentityAPITests.withEndpoints(backend, ["library.yaml": Self.libraryFile]) { service, _ in
            let reader = try await IdentityAPITests.token("Diane", role: "reader")
            let librarian = try await IdentityAPITests.token("Gwen", role: "librarian")

            // Open, though the file asks for a token everywhere (and so its SQL may use no claim).
            let list = try await IdentityAPITests.send(service, "GET", "/books", token: nil)
            #expect(list.status == 200 && list.text == #"{"answer":"open"}"#, "\(list.status) \(list.text)")

            // The endpoint's roles, not the file's: a reader is refused, a librarian served.
            let refused = try await IdentityAPITests.send(service, "POST", "/books", token: reader)
            #expect(refused.status == 403 && refused.text.contains("needs one of librarian"), "\(refused.text)")
            #expect(try await IdentityAPITests.send(service, "POST", "/books", token: nil).status == 401)
            let added = try await IdentityAPITests.send(service, "POST", "/books", token: librarian)
            #expect(added.status == 200 && added.text == #"{"answer":"added","sub":"Gwen"}"#, "\(added.text)")

            // No auth of its own: the file's, any verified token.
            #expect(try await IdentityAPITests.send(service, "DELETE", "/books/1", token: nil).status == 401)
            let deleted = try await IdentityAPITests.send(service, "DELETE", "/books/1", token: reader)
            #expect(deleted.status == 200 && deleted.text == #"{"answer":"deleted","sub":"Diane"}"#, "\(deleted.text)")

            // The OpenAPI document says the same, endpoint by endpoint.
            let document = try #require(try await service.get("/openapi.json").json() as? [String: Any])
            let paths = try #require(document["paths"] as? [String: [String: Any]])
            #expect((paths["/books"]?["get"] as? [String: Any])?["security"] == nil)
            #expect((paths["/books"]?["post"] as? [String: Any])?["security"] != nil)
            #expect((paths["/books/{id}"]?["delete"] as? [String: Any])?["security"] != nil)
        }
    }

    @Test(
        "an endpoint's auth with methods, or a word other than none, stops the start at its line",
        arguments: [
            ("      auth: {token: jwt, methods: [GET]}\n", "an endpoint's 'auth' covers its own method (GET): remove 'methods'", 4),
            ("      auth: open\n", "an endpoint's 'auth' is 'none' (open, whatever the file's 'auth' says) or a mapping, not 'open'", 4),
        ])
    func mistakes(_ line: String, _ message: String, _ lineNumber: Int) throws {
        let file = "paths:\n  /books:\n    get:\n" + line + "      sql: SELECT 1 AS one\n"
        #expect {
            _ = try IdentityAPITests.endpoints(["library.yaml": file])
        } throws: { error in
            let error = error as? ConfigurationError
            return error?.message == message && error?.line == lineNumber
        }
    }
}
