import Foundation
import SpoutCore
import SpoutTestDatabases
import SpoutTestSupport
import Testing

/// A PostgreSQL server that stops answering without closing anything (stopped, frozen, a
/// paused virtual machine, a network that drops packets), played by ``FreezingProxy``: every
/// request that waits for it ends within its statement timeout and `database.answerGraceMs`
/// (504 `database not answering`, counted), the service itself stays up, and once the server
/// answers again requests succeed on fresh connections. Before the deadlines, such requests
/// hung for as long as the server did. PostgreSQL only: SQLite runs inside the process (a
/// locked file is its busy timeout's case).
@Suite("A database server that stops answering", .serialized)
struct UnansweringDatabaseTests {
    @Test("requests waiting for a frozen server end with 504 within the timeout and the grace, and recover once it thaws",
          .enabled(if: TestDatabases.postgresEnabled))
    func frozenServer() async throws {
        let database = try TestDatabases.makePostgresDatabase(prefix: "spout_rel_frozen")
        defer { database.drop() }
        let target = try #require(URLComponents(string: database.url))
        let proxy = try FreezingProxy(upstreamPort: target.port ?? 5432)
        defer { proxy.stop() }
        var proxied = target
        proxied.port = proxy.port
        // connect_timeout as the driver sets it unless the URL does; shorter here, so that the
        // connections opened while frozen give up within the test's time.
        proxied.queryItems = [URLQueryItem(name: "connect_timeout", value: "3")]
        let directory = try ServiceDirectory(
            databaseURL: proxied.string!,
            extraEndpoints: ["streams.yaml": TestEndpoints.streams(.postgres), "slow.yaml": TestEndpoints.slow(.postgres, timeoutMs: 1_000)],
            shipped: false, poolSize: 4, acquireTimeoutMs: 5_000, statementTimeoutMs: 2_000)
        defer { directory.remove() }
        let service = try await ServerProcess.serving(
            arguments: ["--config", directory.configFile, "--no-seed"], environment: ["SPOUT_DATABASE_ANSWER_GRACE_MS": "1000"])

        // Every connection of the pool opened (concurrent requests), so that the requests below
        // find theirs open; then, answering: a single row (read event-driven), a stream (read
        // on a database thread).
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<4 { group.addTask { try await service.get("/hold?seconds=1").status } }
            for try await status in group { #expect(status == 200) }
        }
        #expect(try await service.get("/one").status == 200)
        #expect(try await service.get("/big?rows=10").status == 200)
        // A statement past its timeout is the server's own 504 (it answers within the grace).
        let slow = try await service.get("/hold?seconds=5")
        #expect(slow.status == 504 && slow.text.contains("statement timeout"), "\(slow.status) \(slow.text)")
        // The not-answering series is there before anything failed, at 0 (for rates and alerts).
        let before = try await service.get("/metrics").text
        #expect(before.contains(#"spout_database_not_answering_total{database="primary"} 0"#), "\(before)")

        proxy.freeze()
        // The client's own timeout (30 s) would fail the test if a request hung with the server.
        async let single = service.get("/one")
        async let stream = service.get("/big?rows=10")
        for response in try await [single, stream] {
            #expect(response.status == 504, "\(response.status) \(response.text)")
            #expect(response.text == #"{"error":"database not answering"}"#, "\(response.text)")
        }
        // The service is up but not ready (the probe waits 2 s at most); a request that needs a
        // new connection gets a 503 or a 504 in time.
        #expect(try await service.get("/health").status == 200)
        #expect(try await service.get("/ready", timeout: 6).status == 503)
        let meanwhile = try await service.get("/one")
        #expect(meanwhile.status == 503 || meanwhile.status == 504, "\(meanwhile.status) \(meanwhile.text)")
        let metrics = try await service.get("/metrics").text
        let counted = metrics.split(separator: "\n").first { $0.hasPrefix(#"spout_database_not_answering_total{database="primary"}"#) }
        #expect((counted?.split(separator: " ").last).flatMap { Double($0) }.map { $0 >= 2 } == true, "\(counted ?? "no series")")
        #expect(try String(contentsOfFile: service.logPath, encoding: .utf8).contains("database not answering"))

        proxy.thaw()
        var recovered = false
        for _ in 0..<40 where !recovered {
            recovered = try await service.get("/one", timeout: 10).status == 200
            if !recovered { try await Task.sleep(for: .milliseconds(500)) }
        }
        #expect(recovered, "no 200 within 20 s of the thaw")
        #expect(try await service.get("/big?rows=10").status == 200)
        await service.stop()
    }

    @Test("a connection idle in the pool, or leased by a stream its client reads slowly, is never cut",
          .enabled(if: TestDatabases.postgresEnabled))
    func waitsForTheClientAreNotCut() async throws {
        let database = try TestDatabases.makePostgresDatabase(prefix: "spout_rel_unfrozen")
        defer { database.drop() }
        let directory = try ServiceDirectory(
            databaseURL: database.url, extraEndpoints: ["streams.yaml": TestEndpoints.streams(.postgres)],
            shipped: false, poolSize: 2, statementTimeoutMs: 300)
        defer { directory.remove() }
        let service = try await ServerProcess.serving(
            arguments: ["--config", directory.configFile, "--no-seed"], environment: ["SPOUT_DATABASE_ANSWER_GRACE_MS": "200"])

        #expect(try await service.get("/one").status == 200)
        // Idle for several deadlines.
        try await Task.sleep(for: .seconds(2))
        #expect(try await service.get("/one").status == 200)
        // A stream read over about two seconds, several times the timeout and the grace.
        let socket = try RawSocket(port: service.port, timeout: 30, receiveBuffer: 4096)
        try socket.send(RawHTTP.request("GET", "/big?rows=100000"))
        for _ in 0..<20 {
            _ = try socket.receiveOnce(limit: 4096)
            try await Task.sleep(for: .milliseconds(100))
        }
        try socket.receiveUntilClosed()
        let response = try RawHTTP.parse(socket.received)
        #expect(response.status == 200 && response.isComplete, "\(response.status), complete: \(response.isComplete)")
        let metrics = try await service.get("/metrics").text
        let line = metrics.split(separator: "\n").first { $0.hasPrefix(#"spout_database_not_answering_total{database="primary"}"#) }
        #expect(line?.split(separator: " ").last == "0", "\(line ?? "no series")")
        await service.stop()
    }
}
