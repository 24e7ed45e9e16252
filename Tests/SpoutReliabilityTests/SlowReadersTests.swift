import Foundation
import SpoutCore
import SpoutTestDatabases
import SpoutTestSupport
import Synchronization
import Testing

/// Many clients reading huge streams slowly, against `spout serve` in a child process (so that
/// its memory is its own).
@Suite("Many concurrent slow readers")
struct SlowReadersTests {
    static let readers = 500
    static let poolSize = 8
    /// Connections streams may hold: the pool less the default reserve of 2.
    static let streamConnections = 6

    @Test("500 slow readers of 440 MB streams: memory stays bounded, the streams' overflow gets 503, objects and health stay up",
          .enabled(if: TestDatabases.postgresEnabled))
    func slowReaders() async throws {
        let database = try TestDatabases.makePostgresDatabase(prefix: "spout_rel_readers")
        defer { database.drop() }
        let directory = try ServiceDirectory(
            databaseURL: database.url, extraEndpoints: ["streams.yaml": TestEndpoints.streams(.postgres)],
            shipped: false, poolSize: Self.poolSize, acquireTimeoutMs: 3_000)
        defer { directory.remove() }
        // 500 readers from one address: as many clients behind one NAT or proxy would be, so
        // the per-address caps (tested in SlowlorisTests and SlowDownloadsTests) are off, and
        // the pool is what limits. The spool may hold 64 MiB in all: the first streams fill it
        // within a second, then hold their connections, as every stream did before the spool.
        let server = try await ServerProcess.serving(
            arguments: ["--config", directory.configFile, "--no-seed"],
            environment: [
                "SPOUT_LIMITS_MAX_CONNECTIONS_PER_ADDRESS": "0", "SPOUT_LIMITS_MAX_STREAMS_PER_ADDRESS": "0",
                "SPOUT_SPOOL_MAX_BYTES": String(64 << 20), "SPOUT_DATABASE_STREAM_ACQUIRE_TIMEOUT_MS": "3000",
            ])
        let port = server.port

        // Warm-up: a stream end to end, then the baseline.
        let warm = try await RawHTTP.get(port: port, "/big?rows=20000")
        #expect(warm.status == 200 && warm.isComplete)
        let baseline = try #require(server.residentBytes)

        let probe = Probe()
        let probeTask = Task {
            while !Task.isCancelled {
                for target in ["/health", "/openapi.json", "/one"] {
                    let status = (try? await onThread { try RawHTTP.exchange(port: port, RawHTTP.request("GET", target), timeout: 20) })??.status ?? 0
                    probe.record(target, status)
                }
                try? await Task.sleep(for: .milliseconds(300))
            }
        }

        // 500 clients each ask for 2,000,000 rows (~440 MB) and read 4 KiB every 50 ms.
        let outcome = try await onThread {
            var sockets: [RawSocket] = []
            for _ in 0..<Self.readers {
                let socket = try RawSocket(port: port, timeout: 30, receiveBuffer: 16 * 1024)
                try socket.send(RawHTTP.request("GET", "/big"))
                sockets.append(socket)
            }
            var peak = 0
            for tick in 0..<160 {
                for socket in sockets where !socket.peerClosed {
                    _ = socket.receiveAvailable(limit: 4 * 1024)
                }
                if tick % 4 == 0 { peak = max(peak, server.residentBytes ?? 0) }
                Thread.sleep(forTimeInterval: 0.05)
            }
            let statuses = sockets.map { (try? RawHTTP.parse($0.received))?.status ?? 0 }
            let streamed = zip(sockets, statuses).filter { $0.1 == 200 }.map { $0.0.totalReceived }
            for socket in sockets { socket.close(reset: true) }
            return (statuses: statuses, streamed: streamed, peak: peak)
        }
        probeTask.cancel()
        _ = await probeTask.value

        // Streams beyond the streams' share of the pool waited, then got 503; that share
        // streamed all along.
        #expect(outcome.statuses.allSatisfy { $0 == 200 || $0 == 503 }, "\(Dictionary(grouping: outcome.statuses) { $0 }.mapValues(\.count))")
        #expect(outcome.statuses.filter { $0 == 200 }.count == Self.streamConnections)
        #expect(outcome.streamed.allSatisfy { $0 > 64 * 1024 }, "bytes per stream: \(outcome.streamed)")

        // Bounded memory: tens of GB were asked for; the server holds a few chunks per stream.
        let peak = max(outcome.peak, server.peakResidentBytes ?? 0)
        let growth = peak - baseline
        #expect(growth < 128 * 1024 * 1024, "RSS grew by \(growth / 1024) KiB (baseline \(baseline / 1024) KiB, peak \(peak / 1024) KiB)")
        print("slow readers: RSS baseline \(baseline / 1024) KiB, peak \(peak / 1024) KiB, statuses \(Dictionary(grouping: outcome.statuses) { $0 }.mapValues(\.count))")

        // Meanwhile health and documents never failed, and objects were always answered: the
        // streams could not take the reserved connections.
        let seen = probe.all
        #expect(seen["/health"]?.isEmpty == false && seen["/health"]!.allSatisfy { $0 == 200 }, "\(seen)")
        #expect(seen["/openapi.json"]?.allSatisfy { $0 == 200 } == true, "\(seen)")
        #expect(seen["/one"]?.isEmpty == false && seen["/one"]!.allSatisfy { $0 == 200 }, "\(seen)")

        // Once the readers are gone, the statements stop and the pool serves again.
        #expect(try await eventually {
            Int(try SampleData.column(database.url, """
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()
                """).first ?? "") == 0
        })
        let answered = try await eventually { (try? RawHTTP.exchange(port: port, RawHTTP.request("GET", "/one")))??.status == 200 }
        #expect(answered)
        #expect(server.isRunning)
        server.signal(SIGTERM)
        #expect(await server.waitForExit() == 0)
        await server.stop()
    }
}

/// Statuses seen per target by a probing task.
final class Probe: Sendable {
    private let seen = Mutex<[String: [Int]]>([:])

    func record(_ target: String, _ status: Int) {
        self.seen.withLock { $0[target, default: []].append(status) }
    }

    var all: [String: [Int]] { self.seen.withLock { $0 } }
}
