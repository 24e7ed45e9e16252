import Foundation
import SpoutCore
import SpoutEndpoints
import SpoutDrivers
import SpoutHTTP
import SpoutPostgres
import SpoutTestDatabases
import SpoutTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// End-to-end tests through real sockets against a server on port 0 over PostgreSQL.
@Suite("HTTP server over PostgreSQL", .serialized, .enabled(if: TestDatabases.postgresEnabled))
struct PostgresServerTests {
    func withServer(
        _ configuration: ServerConfiguration = ServerConfiguration(host: "127.0.0.1", port: 0),
        _ body: (ServerFixture, TemporaryDatabase) async throws -> Void
    ) async throws {
        try await ServerFixture.with(
            .postgres, configuration,
            database: DatabaseConfiguration(maximumConnections: 2, acquireTimeout: .milliseconds(300), streamAcquireTimeout: .seconds(1)), body)
    }

    @Test func everyStatus() async throws {
        try await self.withServer { fixture, _ in
            let port = fixture.port
            let list = try await HTTPTestConnection.get(port: port, "/employees?limit=2")
            #expect(list.status == 200)
            #expect(list.text == #"[{"employeeNumber":1,"firstName":"name-1"},{"employeeNumber":2,"firstName":"name-2"}]"#)
            let details = try await HTTPTestConnection.get(port: port, "/employees/3?details=titles")
            #expect(details.text == #"{"employeeNumber":3,"firstName":"name-3","titles":[{"title":"Engineer"},{"title":"Senior Engineer"}]}"#)
            #expect(try await HTTPTestConnection.get(port: port, "/employees/count").text == "50")
            #expect(try await HTTPTestConnection.get(port: port, "/employees/999").status == 404)

            let created = try await HTTPTestConnection.get(
                port: port, "/employees", method: "POST", headers: [("Content-Type", "application/json")],
                body: Array(#"{"employeeNumber": 200, "firstName": "Bo"}"#.utf8)
            )
            #expect(created.status == 201)
            #expect(created.header("Location") == "/employees/200")
            let duplicate = try await HTTPTestConnection.get(
                port: port, "/employees", method: "POST", headers: [("Content-Type", "application/json")],
                body: Array(#"{"employeeNumber": 200, "firstName": "Bo"}"#.utf8)
            )
            #expect(duplicate.status == 409)
            let violation = try await HTTPTestConnection.get(
                port: port, "/employees", method: "POST", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                body: Array("employeeNumber=201&firstName=".utf8)
            )
            #expect(violation.status == 422)
            #expect(try await HTTPTestConnection.get(port: port, "/employees/200", method: "DELETE").status == 204)

            let invalid = try await HTTPTestConnection.get(port: port, "/cast?v=abc")
            #expect(invalid.status == 400)
            #expect(invalid.text == #"{"error":"invalid value"}"#)

            let timeout = try await HTTPTestConnection.get(port: port, "/timeout")
            #expect(timeout.status == 504)
            #expect(timeout.text == #"{"error":"statement timeout"}"#)

            let lost = try await HTTPTestConnection.get(port: port, "/terminate")
            #expect(lost.status == 503)
            #expect(lost.text == #"{"error":"connection lost"}"#)

            let broken = try await HTTPTestConnection.get(port: port, "/broken-sql")
            #expect(broken.status == 500)
            #expect(!broken.text.contains("no_such_secret_table") && !broken.text.contains("relation"))

            let csv = try await HTTPTestConnection.get(port: port, "/attached", headers: [("Accept", "text/csv")])
            #expect(csv.status == 406)

            let first = try fixture.database.leaseBlocking(readOnly: true)
            let second = try fixture.database.leaseBlocking(readOnly: true)
            let exhausted = try await HTTPTestConnection.get(port: port, "/employees")
            first.release()
            second.release()
            #expect(exhausted.status == 503)
            #expect(exhausted.header("Retry-After") == "1")

            let late = try await HTTPTestConnection.get(port: port, "/fail-late")
            #expect(late.status == 200)
            #expect(late.isChunked && !late.isComplete)

            #expect(try await HTTPTestConnection.get(port: port, "/ready").status == 200)
        }
    }

    /// Single-row responses on an open connection wait for PostgreSQL without a thread
    /// (``EventDrivenConnection``), and answer exactly what the thread-pool path answers.
    @Test func singleRowResponsesRunEventDriven() async throws {
        try await self.withServer { fixture, _ in
            let port = fixture.port
            let statistics = fixture.database.statistics
            let expected = #"{"employeeNumber":3,"firstName":"name-3","titles":[{"title":"Engineer"},{"title":"Senior Engineer"}]}"#
            // The first requests open the pool's connections (on the thread pool).
            for _ in 0..<2 { #expect(try await HTTPTestConnection.get(port: port, "/employees/3?details=titles").text == expected) }
            let runs = statistics.eventDrivenRunCount
            let statements = statistics.statementCount
            for _ in 0..<10 {
                let response = try await HTTPTestConnection.get(port: port, "/employees/3?details=titles")
                #expect(response.status == 200)
                #expect(response.text == expected)
                #expect(response.header("Content-Length") == String(expected.utf8.count))
                #expect(response.header("Content-Type") == "application/json")
            }
            #expect(statistics.eventDrivenRunCount - runs == 10)
            #expect(statistics.statementCount - statements == 20, "parent and child, no statement per row")

            let missing = try await HTTPTestConnection.get(port: port, "/employees/999?details=titles")
            #expect(missing.status == 404)
            #expect(try await HTTPTestConnection.get(port: port, "/employees/count").text == "50")
            let lines = try await HTTPTestConnection.get(port: port, "/employees/4", headers: [("Accept", "application/x-ndjson")])
            #expect(lines.text == #"{"employeeNumber":4,"firstName":"name-4"}"# + "\n")
            #expect(statistics.eventDrivenRunCount - runs == 13)
            // Array responses stream from the thread pool as before.
            #expect(try await HTTPTestConnection.get(port: port, "/employees?limit=1").text == #"[{"employeeNumber":1,"firstName":"name-1"}]"#)
            #expect(statistics.eventDrivenRunCount - runs == 13)
        }
    }

    @Test func formatsCompressionAndPipelining() async throws {
        try await self.withServer { fixture, _ in
            let client = try await HTTPTestConnection.connect(port: fixture.port)
            let responses = try await client.run { client -> [HTTPTestResponse] in
                try client.send(
                    RawHTTP.request("GET", "/big?count=5", headers: [("Accept", "application/x-ndjson")], close: false)
                        + RawHTTP.request("GET", "/big?count=4000", headers: [("Accept", "text/csv")], close: false)
                        + RawHTTP.request("GET", "/big?count=30000", headers: [("Accept-Encoding", "gzip")], close: false)
                        + RawHTTP.request("GET", "/big?count=30000", close: false)
                )
                return try (0..<4).map { _ in try client.readResponse() }
            }
            #expect(!responses[0].isChunked)
            #expect(responses[0].text.split(separator: "\n").count == 5)
            #expect(responses[1].isChunked && responses[1].isComplete)
            #expect(responses[1].text.split(separator: "\r\n").count == 4001)
            #expect(responses[2].header("Content-Encoding") == "gzip")
            #expect(try gunzip(responses[2].body) == responses[3].body)
            let rows = try #require(try JSONSerialization.jsonObject(with: Data(responses[3].body)) as? [[String: Any]])
            #expect(rows.count == 30000)
        }
    }

    @Test func disconnectMidStreamCancelsTheQuery() async throws {
        try await self.withServer { fixture, temporary in
            let monitor = try Drivers.driver(for: temporary.url).connect(readOnly: false, statistics: QueryStatistics())
            defer { monitor.close() }
            // A stream reads through a server-side cursor: while it runs, its backend shows the
            // statement or the cursor's FETCH, active or (between batches, waiting for the
            // client) idle in its transaction.
            let activeCount: @Sendable (String) throws -> Int64 = { fragment in
                let sql = try ParsedSQL(
                    """
                    SELECT count(*) FROM pg_stat_activity
                    WHERE datname = current_database() AND pid <> pg_backend_pid()
                      AND state IN ('active', 'idle in transaction')
                      AND (query LIKE :pattern OR query LIKE 'FETCH % FROM spout_c%')
                    """,
                    dialect: .postgres
                )
                let cursor = try monitor.query(sql, [.text("%\(fragment)%")], options: QueryOptions())
                defer { cursor.close() }
                _ = try cursor.next()
                guard case .integer(let count) = cursor.value(at: 0) else { return -1 }
                return count
            }
            let database = fixture.database
            let leasesAvailable: @Sendable () -> Bool = {
                guard let first = try? database.leaseBlocking(readOnly: true) else { return false }
                defer { first.release() }
                guard let second = try? database.leaseBlocking(readOnly: true) else { return false }
                second.release()
                return true
            }

            // Before the first byte: generate_series materializes its rows before returning any.
            let early = try await HTTPTestConnection.connect(port: fixture.port)
            try await early.run { try $0.send(RawHTTP.request("GET", "/big?count=1000000000", headers: [("X-Request-Id", "pg-early")], close: false)) }
            try #require(try await eventually { try activeCount("generate_series(1, $1)") == 1 }, "the early query runs")
            early.closeNow()
            try #require(try await eventually { try activeCount("generate_series(1, $1)") == 0 }, "the early query is gone")
            try #require(try await eventually(leasesAvailable), "both connections can be leased")

            // Mid-stream: the client has read part of the body, then goes away.
            let client = try await HTTPTestConnection.connect(port: fixture.port, receiveBufferSize: 16 * 1024)
            let head = try await client.run { client -> Int in
                try client.send(RawHTTP.request("GET", "/endless", headers: [("X-Request-Id", "pg-gone")], close: false))
                return try client.drain(atMost: 4096)
            }
            #expect(head > 0)
            try #require(try await eventually { try activeCount("endless-") == 1 }, "the query runs")
            client.closeNow()
            try #require(try await eventually { try activeCount("endless-") == 0 }, "the query is gone")
            try #require(try await eventually(leasesAvailable), "both connections can be leased")
            #expect(fixture.log.requests(withID: "pg-early").first?.metadata["error"] == "client closed the connection")
            #expect(fixture.log.requests(withID: "pg-gone").first?.metadata["error"] == "client closed the connection")
        }
    }
}
