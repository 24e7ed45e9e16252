import Foundation
import SpoutCore
import SpoutTestSupport
import Testing

/// The statement timeout bounds the database's work, not the client's download.
///
/// The first round applied `statementTimeoutMs` to a whole streamed statement: with backpressure
/// working, a client reading slowly kept the statement open past the timeout and PostgreSQL
/// cancelled it mid-body (a truncated 200). Streams now read in batches (a cursor's `FETCH` on
/// PostgreSQL, a step budget on SQLite), each under the timeout; the time spent waiting for the
/// client is not counted. A statement slow inside the database is still stopped at the limit.
@Suite("Slow clients and the statement timeout")
struct SlowClientTimeoutTests {
    static let timeoutMs = 2_000
    /// About 8.6 MB of JSON (200-byte pads on PostgreSQL, 200 hex digits on SQLite).
    static let rows = 40_000

    @Test("a client reading at about 1.5 MB/s for longer than the timeout gets the whole body",
          arguments: [SQLDialect.postgres, .sqlite])
    func slowReaderGetsEverything(dialect: SQLDialect) async throws {
        try await self.withService(dialect) { service in
            let started = ContinuousClock.now
            let received = try await onThread {
                let socket = try RawSocket(port: service.port, timeout: 60, receiveBuffer: 16 * 1024)
                defer { socket.close() }
                try socket.send(RawHTTP.request("GET", "/big?rows=\(Self.rows)"))
                // 24 KiB every 16 ms: about 1.5 MB/s.
                while !socket.peerClosed {
                    if try socket.receiveOnce(limit: 24 * 1024) == 0 { break }
                    Thread.sleep(forTimeInterval: 0.016)
                }
                return socket.received
            }
            let elapsed = ContinuousClock.now - started
            let response = try RawHTTP.parse(received)
            #expect(response.status == 200)
            #expect(response.isComplete, "the body was cut short after \(response.body.count) bytes")
            let rows = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [[String: Any]])
            #expect(rows.count == Self.rows)
            #expect(rows.last?["id"] as? Int == Self.rows)
            // The download really outlasted the timeout, or the test proves nothing.
            #expect(elapsed > .milliseconds(2 * Self.timeoutMs), "the download took only \(elapsed)")
        }
    }

    @Test("a statement slower than the timeout inside the database is still 504",
          arguments: [SQLDialect.postgres, .sqlite])
    func slowStatementIsStopped(dialect: SQLDialect) async throws {
        try await self.withService(dialect) { service in
            let started = ContinuousClock.now
            let response = try await service.get("/slowrows", timeout: 60)
            #expect(response.status == 504)
            #expect(response.text == #"{"error":"statement timeout"}"#)
            #expect(ContinuousClock.now - started < .seconds(20))
            #expect(try await service.get("/big?rows=3", timeout: 30).status == 200)
        }
    }

    /// A rows endpoint whose statement keeps the database busy without producing a row.
    static func slowRows(_ dialect: SQLDialect) -> String {
        let sql: String
        switch dialect {
        case .postgres: sql = "SELECT pg_sleep(30) IS NULL AS slept FROM generate_series(1, 3)"
        case .sqlite: sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c"
        }
        return """
            paths:
              /slowrows:
                get:
                  description: Rows that take longer than the timeout to compute.
                  sql: "\(sql)"

            """
    }

    private func withService(_ dialect: SQLDialect, _ body: (ServerProcess) async throws -> Void) async throws {
        try await StreamsService.with(
            dialect, prefix: "spout_rel_slowclient", extraEndpoints: ["slowrows.yaml": Self.slowRows(dialect)], poolSize: 2,
            statementTimeoutMs: Self.timeoutMs, body)
    }
}
