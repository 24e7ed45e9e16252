import Foundation
import SpoutCore
import SpoutTestDatabases
import SpoutTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A cancel request whose connection hangs (a firewall that drops it, a server that stopped
/// answering) must stall nothing but the thread sending it: not the event loops, not the
/// PostgreSQL reactor thread, not other requests. `PQcancel` opens a connection of its own and
/// waits for the server to close it; the first round held the lease's lock and the
/// connection's cancel lock meanwhile, which the event loop (releasing a lease) and the
/// reactor (reading an error) also take.
@Suite("Black-holed cancel requests", .serialized)
struct BlackHoledCancelTests {
    @Test("clients leaving while cancel requests hang do not slow other requests",
          .enabled(if: TestDatabases.postgresEnabled))
    func hangingCancelsStallNothing() async throws {
        let database = try TestDatabases.makePostgresDatabase(prefix: "spout_rel_blackhole")
        defer { database.drop() }
        let target = try #require(URLComponents(string: database.url))
        let proxy = try CancelBlackHole(upstreamPort: target.port ?? 5432)
        defer { proxy.stop() }
        var proxied = target
        proxied.port = proxy.port
        let directory = try ServiceDirectory(
            databaseURL: proxied.string!,
            extraEndpoints: [
                "streams.yaml": TestEndpoints.streams(.postgres), "slow.yaml": TestEndpoints.slow(.postgres, timeoutMs: 30_000),
                "sleepy.yaml": Self.sleepyStream,
            ],
            shipped: false, poolSize: 6, statementTimeoutMs: 0)
        defer { directory.remove() }
        let service = try await ServerProcess.serving(arguments: ["--config", directory.configFile, "--no-seed"])

        // Open every connection of the pool (concurrent requests), so that later requests find
        // one open: a single row then runs event-driven, waited on by the reactor thread.
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<6 { group.addTask { try await service.get("/hold?seconds=1").status } }
            for try await status in group { #expect(status == 200) }
        }

        // The `pg_sleep` calls running in the database, seen from a connection of the test's own
        // (not through the proxy): the events this test waits for. By wait event, not by query
        // text: a stream's statement shows as its cursor's `FETCH`.
        let sleeping: @Sendable () throws -> Int = {
            Int(try SampleData.column(database.url, """
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event = 'PgSleep' AND pid <> pg_backend_pid()
                """).first ?? "") ?? -1
        }

        // Two clients leave while their statements run: a stream (its `FETCH` waited on by one of
        // the database's threads) and a single row (waited on by the reactor thread). Each makes
        // Spout send a cancel request, which the proxy holds. Both statements still run for a
        // second or more when the clients leave, so both requests are sent however late the
        // machine runs the cancel job (a request that finds its lease already given back is
        // rightly dropped: the statement it was for has ended).
        let stream = try RawSocket(port: service.port, timeout: 30)
        try stream.send(RawHTTP.request("GET", "/sleepy-stream?seconds=2"))
        let single = try RawSocket(port: service.port, timeout: 30)
        try single.send(RawHTTP.request("GET", "/hold?seconds=2"))
        #expect(try await eventually { try sleeping() == 2 }, "the two statements never ran together")
        // The leases are then released (on an event loop, on a database thread) while the cancel
        // requests still hang: neither may wait for them.
        stream.close(reset: true)
        single.close(reset: true)
        #expect(try await eventually { proxy.heldCancels >= 2 }, "Spout sent \(proxy.heldCancels) cancel requests")
        #expect(try await eventually { try sleeping() == 0 }, "the held statements did not end")

        // Meanwhile every other request is served at once, on every path.
        var slowest = Duration.zero
        for target in Array(repeating: ["/one", "/health", "/big?rows=10"], count: 10).flatMap({ $0 }) {
            let started = ContinuousClock.now
            let response = try await service.get(target, timeout: 10)
            slowest = max(slowest, ContinuousClock.now - started)
            #expect(response.status == 200, "\(target): \(response.status)")
        }
        #expect(slowest < .seconds(2), "a request took \(slowest) while cancel requests hung")
        proxy.stop()  // the held cancel requests fail now, and their threads go on
        await service.stop()
    }
}

extension BlackHoledCancelTests {
    /// `GET /sleepy-stream?seconds=S`: a stream whose first `FETCH` sleeps about S seconds
    /// before its first row.
    static let sleepyStream = """
        paths:
          /sleepy-stream:
            get:
              description: A stream that is slow to start.
              sql: "SELECT g AS id, pg_sleep(CASE WHEN g = 1 THEN :seconds ELSE 0 END) IS NULL AS slept FROM generate_series(1, 3) AS g"
              parameters:
                - name: seconds
                  type: integer
                  default: 1

        """
}

/// A TCP proxy in front of PostgreSQL that forwards every connection, except cancel requests
/// (the 16-byte `CancelRequest` packet), which it accepts and then holds open without an
/// answer: to libpq's `PQcancel`, a server that never finishes taking the request.
final class CancelBlackHole: Sendable {
    let port: Int
    private let listener: Int32
    private let state = Mutex<(held: [Int32], stopped: Bool, heldCount: Int)>(([], false, 0))

    var heldCancels: Int { self.state.withLock { $0.heldCount } }

    init(upstreamPort: Int) throws {
        self.port = try ThrowawayPostgres.freePort()
        self.listener = try LoopbackSocket.listen(port: self.port)
        LoopbackSocket.serveEach(on: self.listener) { [self] client in self.serve(client, upstreamPort: upstreamPort) }
    }

    private func serve(_ client: Int32, upstreamPort: Int) {
        var first = [UInt8](repeating: 0, count: 8)
        guard recv(client, &first, 8, Int32(MSG_PEEK | MSG_WAITALL)) == 8 else {
            close(client)
            return
        }
        // CancelRequest: length 16, code 80877102 (1234 << 16 | 5678).
        if first[0..<8] == [0, 0, 0, 16, 0x04, 0xD2, 0x16, 0x2E] {
            let keep = self.state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.held.append(client)
                state.heldCount += 1
                return true
            }
            if !keep { close(client) }
            return
        }
        guard let upstream = try? LoopbackSocket.connect(port: upstreamPort, timeout: 3600) else {
            close(client)
            return
        }
        Thread { LoopbackSocket.pump(from: upstream, to: client) }.start()
        LoopbackSocket.pump(from: client, to: upstream)
    }

    /// Stops accepting and closes the held cancel connections (their `PQcancel` calls return).
    func stop() {
        let held = self.state.withLock { state -> [Int32] in
            state.stopped = true
            defer { state.held = [] }
            return state.held
        }
        for fd in held { close(fd) }
        shutdown(self.listener, Int32(SHUT_RDWR))
    }
}
