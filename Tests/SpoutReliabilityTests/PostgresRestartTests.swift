import Foundation
import SpoutCore
import SpoutTestServer
import SpoutTestSupport
import Testing

/// PostgreSQL going away and coming back while Spout keeps running.
@Suite("PostgreSQL restarted under a running service")
struct PostgresRestartTests {
    static let endpoints = """
        paths:
          /sleepy:
            get:
              description: Holds a connection for a second, so that concurrent calls open several even when their starts are spread by a busy machine.
              sql: SELECT pg_sleep(1) IS NULL AS slept
              result: object

        """

    @Test(
        "while PostgreSQL is down requests fail fast with 503; once it is back every request succeeds",
        .enabled(if: ThrowawayPostgres.isAvailable, "PostgreSQL server binaries (initdb) are not installed"))
    func restart() async throws {
        let cluster = try await onThread { try ThrowawayPostgres.create() }
        defer { cluster.remove() }
        let url = cluster.adminURL + "?connect_timeout=3"
        try await onThread { try SampleData.seed(url, employees: 20) }
        // No shared connections: the slow calls below are to open every connection of the pool.
        let directory = try ServiceDirectory(
            databaseURL: url, extraEndpoints: ["restart.yaml": Self.endpoints], poolSize: 4, acquireTimeoutMs: 1_000, sharedReaders: 0)
        defer { directory.remove() }
        let service = try await InProcessServer.start(directory)

        // Open every connection of the pool: four concurrent slow calls.
        try await self.expectConcurrentSleepers(service, count: 4, phase: "before the restart")
        #expect(service.database.connectionsInUse.read == 4)

        // Down: every pooled connection is dead and new ones are refused.
        try await onThread { try cluster.stop() }
        for attempt in 0..<8 {
            let response = try await service.get("/pets", timeout: 15)
            #expect(response.status == 503, "request \(attempt) while PostgreSQL is down: \(response.status) \(response.text)")
            #expect(!response.text.localizedCaseInsensitiveContains("postgres"), "\(response.text)")
        }
        let ready = try await service.get("/ready", timeout: 15)
        #expect(ready.status == 503)
        let health = try await service.get("/health", timeout: 15)
        #expect(health.status == 200)

        // Back: requests succeed without restarting Spout, on every connection of the pool.
        try await onThread { try cluster.start() }
        for attempt in 0..<10 {
            let response = try await service.get("/pets", timeout: 15)
            #expect(response.status == 200, "request \(attempt) after the restart: \(response.status) \(response.text)")
        }
        try await self.expectConcurrentSleepers(service, count: 4, phase: "after the restart")
        #expect(try await service.get("/ready").status == 200)
        await service.stop()
    }

    @Test(
        "pooled connections broken by a restart nobody noticed are not handed out again for good",
        .enabled(if: ThrowawayPostgres.isAvailable, "PostgreSQL server binaries (initdb) are not installed"))
    func silentRestart() async throws {
        let cluster = try await onThread { try ThrowawayPostgres.create() }
        defer { cluster.remove() }
        let url = cluster.adminURL + "?connect_timeout=3"
        try await onThread { try SampleData.seed(url, employees: 20) }
        let directory = try ServiceDirectory(
            databaseURL: url, extraEndpoints: ["restart.yaml": Self.endpoints], poolSize: 4, acquireTimeoutMs: 1_000, sharedReaders: 0)
        defer { directory.remove() }
        let service = try await InProcessServer.start(directory)
        try await self.expectConcurrentSleepers(service, count: 4, phase: "before the restart")

        // Restarted with no request in between: the four idle connections are all dead.
        try await onThread {
            try cluster.stop()
            try cluster.start()
        }
        var statuses: [Int] = []
        for _ in 0..<12 {
            statuses.append(try await service.get("/pets", timeout: 15).status)
        }
        // A dead connection may fail the one request that finds it (503, never another status
        // and never a hang); it is then discarded, so failures stop within the pool's size.
        #expect(statuses.allSatisfy { $0 == 200 || $0 == 503 }, "\(statuses)")
        #expect(statuses.filter { $0 == 503 }.count <= 4, "\(statuses)")
        #expect(statuses.suffix(8).allSatisfy { $0 == 200 }, "\(statuses)")
        try await self.expectConcurrentSleepers(service, count: 4, phase: "after the restart")
        await service.stop()
    }

    private func expectConcurrentSleepers(_ service: InProcessServer, count: Int, phase: String) async throws {
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<count {
                group.addTask { try await service.get("/sleepy", timeout: 15).status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: count), "\(phase): \(statuses)")
    }
}
