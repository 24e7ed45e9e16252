import SpoutCore
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Arguments the two databases would treat differently, refused by Spout before any SQL so that
/// both answer the same 400 naming the parameter: text holding U+0000 (PostgreSQL's text types
/// refuse it, SQLite stores and matches it), dates outside the years 1 to 9999 (PostgreSQL
/// refuses a year 0 in text and days past 5874897, SQLite compares anything), and values past
/// a parameter's declared limits (an INT column's range; a VARCHAR(20)'s length, which only
/// PostgreSQL enforces).
@Suite("Arguments the databases would treat differently")
struct DivergentArgumentTests {
    /// `GET` and `POST /echo?text=…` answer their text; no token is needed.
    static let echo = """
        paths:
          /echo:
            get: &echo
              description: Answers its text.
              sql: SELECT :text AS text
              result: object
              parameters:
                - name: text
                  type: string
            post: *echo

        """

    @Test("U+0000 in text, from any source, and dates outside the years 1 to 9999 are the same 400 on both databases; nothing is stored",
          arguments: SQLDialect.allCases)
    func refusedAlike(_ dialect: SQLDialect) async throws {
        guard let database = try TestDatabases.make(dialect, prefix: "spout_rel_divergent") else { return }
        defer { database.drop() }
        try await onThread { try SampleData.seed(database.url, employees: 10) }
        let before = try await onThread { try SampleData.petsChecksum(database.url) }
        let directory = try ServiceDirectory(databaseURL: database.url, extraEndpoints: ["echo.yaml": Self.echo])
        defer { directory.remove() }
        let service = try await InProcessServer.start(directory)

        let plain = try await service.get("/echo?text=a%01b")
        let query = try await service.get("/echo?text=a%00b")
        let filter = try await service.get("/employees?lastName=%00")
        let path = try await service.get("/pets/a%00b")
        let form = try await RawHTTP.send(
            port: service.port,
            RawHTTP.request("POST", "/echo", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array("text=a%00b".utf8)))
        let json = try await RawHTTP.send(
            port: service.port,
            RawHTTP.request("POST", "/echo", headers: [("Content-Type", "application/json")], body: Array(#"{"text":"a\u0000b"}"#.utf8)))
        let token = try await TestTokens.authorization(sub: "Gwen")
        let write = try await RawHTTP.send(
            port: service.port,
            RawHTTP.request("POST", "/pets", headers: [("Content-Type", "application/json"), token], body: Array(#"{"name":"a\u0000b"}"#.utf8)))
        // Longer than the VARCHAR(20) column: PostgreSQL refused it with a 400 naming nothing,
        // SQLite stored it. The shipped endpoint declares the length.
        let longName = try await RawHTTP.send(
            port: service.port,
            RawHTTP.request("POST", "/pets", headers: [("Content-Type", "application/json"), token], body: Array(#"{"name":"Sir Fluffington the 3rd"}"#.utf8)))
        let yearZero = try await service.get("/employees?hiredAfter=0000-01-01&pageSize=1")
        let farPast = try await service.get("/employees?hiredAfter=-9223372036854775808&pageSize=1")
        let farFuture = try await service.get("/employees?hiredBefore=253402300800000&pageSize=1")
        let firstDay = try await service.get("/employees?hiredAfter=0001-01-01&pageSize=1")
        let lastDay = try await service.get("/employees?hiredBefore=9999-12-31&pageSize=1")
        let bigNumber = try await service.get("/employees/2147483648")
        let largestNumber = try await service.get("/employees/2147483647")
        let paddedKey = try await service.get("/departments/d005%20")
        let after = try await onThread { try SampleData.petsChecksum(database.url) }
        // A subject as identity providers make them (Keycloak's: a 36-character UUID) owns a
        // pet on both databases; the menagerie's VARCHAR(20) owner refused it on PostgreSQL.
        let keycloak = try await TestTokens.authorization(sub: "f3c5b6a2-8d1e-4c2b-9f7a-1e2d3c4b5a69")
        let created = try await RawHTTP.send(
            port: service.port,
            RawHTTP.request("POST", "/pets", headers: [("Content-Type", "application/json"), keycloak], body: Array(#"{"name":"Kc"}"#.utf8)))
        await service.stop()

        #expect(plain.status == 200)
        #expect(plain.text == #"{"text":"a\u0001b"}"#)
        let refused = #"{"error":"text must not contain U+0000 (NUL)","parameter":"text","value":"a\u0000b"}"#
        for response in [query, form, json] {
            #expect(response.status == 400)
            #expect(response.text == refused)
        }
        #expect(filter.status == 400)
        #expect(filter.text == #"{"error":"text must not contain U+0000 (NUL)","parameter":"lastName","value":"\u0000"}"#)
        #expect(path.status == 400)
        #expect(path.text.contains(#""parameter":"name""#), "\(path.text)")
        #expect(write.status == 400)
        #expect(write.text == #"{"error":"text must not contain U+0000 (NUL)","parameter":"name","value":"a\u0000b"}"#)
        #expect(longName.status == 400)
        #expect(longName.text == #"{"error":"text too long (1 to 20 characters)","parameter":"name","value":"Sir Fluffington the 3rd"}"#)
        #expect(after == before)
        #expect(created.status == 201, "\(created.status) \(created.text)")
        #expect(created.text.contains(#""owner":"f3c5b6a2-8d1e-4c2b-9f7a-1e2d3c4b5a69""#), "\(created.text)")

        // An integer past the column's INT: PostgreSQL could not compare it (a 400 naming
        // nothing), SQLite found no row (404). The shipped endpoint declares its range.
        #expect(bigNumber.status == 400)
        #expect(bigNumber.text == #"{"error":"integer out of range (1 to 2147483647)","parameter":"employeeNumber","value":"2147483648"}"#)
        #expect(largestNumber.status == 404)
        // A key with a trailing space: PostgreSQL's CHAR(4) comparison ignores it (200 with
        // d005), SQLite's does not (404). The shipped endpoint declares maxLength 4.
        #expect(paddedKey.status == 400)
        #expect(paddedKey.text == #"{"error":"text too long (at most 4 characters)","parameter":"departmentNumber","value":"d005 "}"#)

        let range = "date out of range (0001-01-01 to 9999-12-31)"
        #expect(yearZero.status == 400)
        #expect(yearZero.text == #"{"error":"\#(range)","parameter":"hiredAfter","value":"0000-01-01"}"#)
        #expect(farPast.status == 400)
        #expect(farPast.text == #"{"error":"\#(range)","parameter":"hiredAfter","value":"-9223372036854775808"}"#)
        #expect(farFuture.status == 400)
        #expect(farFuture.text.contains(#""parameter":"hiredBefore""#), "\(farFuture.text)")
        #expect(firstDay.status == 200)
        #expect(lastDay.status == 200)
        #expect(firstDay.text == lastDay.text && firstDay.text.hasPrefix(#"[{"employeeNumber":10001,"#), "\(firstDay.text) / \(lastDay.text)")
    }
}
