import Foundation
import SpoutCore
import SpoutDrivers
import SpoutEndpoints
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// `database.traceContext`: each request's transaction shows its W3C trace context first in
/// its `application_name`, on every path a request takes (an object read event-driven, a
/// stream and a page on a thread, a write), with and without session state (behind a
/// transaction pooler), and never beyond its transaction. SQLite answers the same bytes.
@Suite("Trace context into the database", .serialized)
struct TraceIntoDatabaseTests {
    static let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"

    static let file = """
        paths:
          /name:
            get:
              sql: SELECT current_setting('application_name') AS name
              result: object
          /names:
            get:
              sql: SELECT n, current_setting('application_name') AS name FROM generate_series(1, 3) AS n ORDER BY n
              page: {key: [n], size: 2, maxSize: 10}
          /note:
            post:
              sql: SELECT current_setting('application_name') AS name, CAST(:text AS text) AS text
              result: object
              parameters:
                - name: text
                  type: string
        """

    static let sqliteFile = """
        paths:
          /name:
            get:
              sql: SELECT 'sqlite' AS name
              result: object
        """

    /// The service, with tracing into the database on; `preparedStatements: false` as behind
    /// PgBouncer in transaction mode.
    static func withService(
        _ dialect: SQLDialect, preparedStatements: Bool = true, _ body: (InProcessServer, Database, String) async throws -> Void
    ) async throws {
        guard let store = try TestDatabases.make(dialect, prefix: "spout_t_trace") else { return }
        defer { store.drop() }
        let database = Database(
            driver: try Drivers.driver(for: store.url, preparedStatements: preparedStatements), configuration: DatabaseConfiguration(maximumConnections: 1))
        defer { database.close() }
        let (endpoints, directory) = try IdentityAPITests.endpoints(["trace.yaml": dialect == .postgres ? Self.file : Self.sqliteFile])
        defer { try? FileManager.default.removeItem(at: directory) }
        var traced = endpoints
        traced.tracesIntoDatabase = true
        try await InProcessServer.serving(traced, database: database) { service in
            // The connection's own name (PostgreSQL), as work without a trace sees it.
            guard dialect == .postgres else {
                // The file exists once something was written (reads open it read-only).
                try await database.withSession(DatabaseWork(readOnly: false)) { session in
                    try await session.run { connection in try connection.executeScript("CREATE TABLE made (x integer)") }
                }
                return try await body(service, database, "")
            }
            let own = try await database.withSession(DatabaseWork(readOnly: true)) { session in
                try await session.run { connection in
                    let cursor = try connection.query(
                        try ParsedSQL("SELECT current_setting('application_name')", dialect: dialect), [], options: QueryOptions())
                    defer { cursor.close() }
                    _ = try cursor.next()
                    guard case .text(let name) = cursor.value(at: 0) else { return "" }
                    return name
                }
            }
            try await body(service, database, own)
        }
    }

    /// A request carrying a `traceparent`; what the database saw, and Spout's span id.
    static func send(
        _ service: InProcessServer, _ method: String, _ path: String, form: String = ""
    ) async throws -> (response: HTTPTestResponse, spanID: String) {
        var headers = [("traceparent", "00-\(Self.traceID)-00f067aa0ba902b7-01")]
        if !form.isEmpty { headers.append(("Content-Type", "application/x-www-form-urlencoded")) }
        let response = try await RawHTTP.get(port: service.port, path, method: method, headers: headers, body: Array(form.utf8))
        let parts = try #require(response.header("traceresponse")).split(separator: "-")
        try #require(parts.count == 4 && parts[1] == Self.traceID, "\(response.header("traceresponse") ?? "none")")
        return (response, String(parts[2]))
    }

    @Test("PostgreSQL: objects, streams, pages and writes run with the trace first in application_name, ended with the transaction",
          arguments: [true, false])
    func postgresShowsTheTrace(preparedStatements: Bool) async throws {
        try await Self.withService(.postgres, preparedStatements: preparedStatements) { service, database, own in
            #expect(own.hasPrefix("spout@"), "the connection's own name: \(own)")
            // PostgreSQL keeps 63 bytes of a name: the trace (49) comes first, the connection's
            // own name after it, cut where the 63 bytes end.
            func expected(_ span: String) -> String { String("\(Self.traceID)-\(span) \(own)".prefix(63)) }

            let object = try await Self.send(service, "GET", "/name")
            #expect(object.response.text == #"{"name":"\#(expected(object.spanID))"}"#)

            let stream = try await Self.send(service, "GET", "/names")
            let rows = try #require(try JSONSerialization.jsonObject(with: Data(stream.response.body)) as? [[String: Any]])
            #expect(rows.count == 3 && rows.allSatisfy { $0["name"] as? String == expected(stream.spanID) }, "\(stream.response.text)")

            let page = try await Self.send(service, "GET", "/names?pageSize=2")
            #expect(page.response.text.contains(expected(page.spanID)) && page.response.header("link") != nil, "\(page.response.text)")

            let write = try await Self.send(service, "POST", "/note", form: "text=hello")
            #expect(write.response.text == #"{"name":"\#(expected(write.spanID))","text":"hello"}"#, "\(write.response.text)")

            // Each request its own span; none outlives its transaction on the pool's one connection.
            #expect(Set([object.spanID, stream.spanID, page.spanID, write.spanID]).count == 4)
            let after = try await database.withSession(DatabaseWork(readOnly: true)) { session in
                try await session.run { connection in
                    let cursor = try connection.query(
                        try ParsedSQL("SELECT current_setting('application_name')", dialect: .postgres), [], options: QueryOptions())
                    defer { cursor.close() }
                    _ = try cursor.next()
                    return cursor.value(at: 0)
                }
            }
            #expect(after == .text(own))
        }
    }

    @Test("SQLite: tracing into the database changes nothing")
    func sqliteIsUnchanged() async throws {
        try await Self.withService(.sqlite) { service, _, _ in
            let answer = try await Self.send(service, "GET", "/name")
            #expect(answer.response.text == #"{"name":"sqlite"}"#)
        }
    }
}
