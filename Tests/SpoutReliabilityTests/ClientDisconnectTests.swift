import Foundation
import SpoutCore
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Clients that go away in the middle of a streamed response.
@Suite("Clients disconnecting mid-stream")
struct ClientDisconnectTests {
    /// The probe of "a statement still runs": PostgreSQL's own view of its backends (ours
    /// excluded); on SQLite, whose statements run in the process, a running statement holds its
    /// lease, so the pool's connections in use.
    @Test("disconnects mid-stream leak no running statement, connection, descriptor or socket", arguments: SQLDialect.allCases)
    func disconnectsLeakNothing(_ dialect: SQLDialect) async throws {
        guard let database = try TestDatabases.make(dialect, prefix: "spout_rel_disconnect") else { return }
        defer { database.drop() }
        switch dialect {
        case .postgres:
            try await self.disconnectRepeatedly(url: database.url, dialect: .postgres, times: 200) { _ in
                Int(try SampleData.column(database.url, """
                    SELECT count(*) FROM pg_stat_activity
                    WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()
                    """).first ?? "") ?? -1
            }
        case .sqlite:
            // Creates the file; the endpoints need no table.
            try await onThread { _ = try SampleData.column(database.url, "SELECT 1") }
            try await self.disconnectRepeatedly(url: database.url, dialect: .sqlite, times: 100) { service in
                service.database.poolState.inUse
            }
        }
    }

    /// A single-row response on PostgreSQL read event-driven on a leased connection (no thread
    /// of its own; shared connections off): a client that leaves cancels the request's task,
    /// which cancels the statement. (On a shared connection nothing is cancelled: Shared reads.)
    @Test("a disconnect during an event-driven response on PostgreSQL cancels its statement",
          .enabled(if: TestDatabases.postgresEnabled))
    func postgresEventDriven() async throws {
        let database = try TestDatabases.makePostgresDatabase(prefix: "spout_rel_disconnect")
        defer { database.drop() }
        let directory = try ServiceDirectory(
            databaseURL: database.url, extraEndpoints: ["slow.yaml": TestEndpoints.slow(.postgres, timeoutMs: 60_000)],
            shipped: false, poolSize: 1, acquireTimeoutMs: 5_000, sharedReaders: 0)
        defer { directory.remove() }
        let service = try await InProcessServer.start(directory)
        // Opens the pool's one connection, so the next request can run event-driven.
        #expect(try await service.get("/hold?seconds=0").status == 200)
        let runs = service.database.statistics.eventDrivenRunCount
        let sleeping: @Sendable () throws -> Int = {
            Int(try SampleData.column(database.url, """
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = current_database() AND state = 'active' AND query LIKE '%pg_sleep%' AND pid <> pg_backend_pid()
                """).first ?? "") ?? -1
        }
        let socket = try RawSocket(port: service.port, timeout: 30)
        try socket.send(RawHTTP.request("GET", "/hold?seconds=60"))
        #expect(try await eventually { try sleeping() == 1 }, "the statement never started")
        let left = ContinuousClock.now
        socket.close(reset: true)

        #expect(try await eventually { try sleeping() == 0 }, "the statement still runs after the client left")
        #expect(ContinuousClock.now - left < .seconds(15))
        #expect(service.database.statistics.eventDrivenRunCount == runs + 1)
        // The pool's one connection serves again.
        #expect(try await service.get("/hold?seconds=0").status == 200)
        await service.stop()
    }

    private func disconnectRepeatedly(
        url: String, dialect: SQLDialect, times: Int, runningStatements: @escaping @Sendable (InProcessServer) throws -> Int
    ) async throws {
        let poolSize = 4
        let directory = try ServiceDirectory(
            databaseURL: url,
            extraEndpoints: ["streams.yaml": TestEndpoints.streams(dialect), "slow.yaml": TestEndpoints.slow(dialect, timeoutMs: 60_000)],
            shipped: false, poolSize: poolSize, acquireTimeoutMs: 5_000)
        defer { directory.remove() }
        let service = try await InProcessServer.start(directory)
        let port = service.port
        // Warm up (the first stream opens a connection, loads libraries and caches).
        #expect(try await service.get("/big?rows=1000").status == 200)
        let descriptorsBefore = ProcessProbe.ownDescriptorCount

        let heads = try await onThread {
            var heads: [Int] = []
            for round in 0..<times {
                let socket = try RawSocket(port: port, timeout: 30)
                try socket.send(RawHTTP.request("GET", "/big"))
                // Far enough into the body that the stream runs, then gone (half of them with RST).
                try socket.receive(atLeast: 64 * 1024 + (round % 7) * 10_000)
                if let response = try? RawHTTP.parse(socket.received) { heads.append(response.status) }
                socket.close(reset: round % 2 == 0)
            }
            return heads
        }
        #expect(heads == Array(repeating: 200, count: times))

        // Every statement stops, every server-side socket closes.
        #expect(try await eventually { try runningStatements(service) == 0 }, "statements still running after the clients left")
        #expect(try await eventually { ProcessProbe.serverSideSockets(port: port) == 0 },
                "\(ProcessProbe.serverSideSockets(port: port)) server-side sockets still open")
        // Other suites run in this process at the same time: the slack absorbs their descriptors,
        // not one per disconnect.
        let descriptorsAfter = ProcessProbe.ownDescriptorCount
        #expect(descriptorsAfter <= descriptorsBefore + times / 3, "descriptors: \(descriptorsBefore) before, \(descriptorsAfter) after")

        // Every connection of the pool is free again: the pool's size in concurrent statements
        // all get one (a leaked lease would make one wait 5 s and fail with 503).
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<poolSize {
                group.addTask { try await service.get("/hold?seconds=1").status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: poolSize))
        let complete = try await service.get("/big?rows=50000")
        #expect(complete.status == 200 && complete.isComplete)
        #expect(complete.text.hasSuffix("}]") && complete.text.contains(#""id":50000,"#))

        // Once the server is gone and the database closed, no lease is left outstanding.
        await service.stop()
        #expect(try await eventually { service.database.connectionsInUse == (read: 0, write: 0) },
                "connections still leased: \(service.database.connectionsInUse)")
    }
}
