import Foundation
import SpoutCore
import SpoutDrivers
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

/// Many clients reading a large file sent whole (an app's photos on a bad network), slowly:
/// each holds the spool's memory share of it (`memoryBytesPerStream`), the rest waits in the
/// spool file, where before every byte of every body waited in memory for its client.
@Suite("Slow readers of files sent whole")
struct SlowWholeBodyReadersTests {
    static let readers = 40
    static let size = 4 << 20

    static func endpoints(_ dialect: SQLDialect) -> String {
        """
        paths:
          /photo/{name}:
            get:
              description: A stored file.
              sql: SELECT image FROM photo WHERE name = :name
              result: bytes
              mediaType: image/jpeg

        """
    }

    /// A table `photo` with one 4 MiB file, `big`, of bytes that do not repeat.
    static func seed(_ dialect: SQLDialect) -> String {
        switch dialect {
        case .postgres:
            return """
                CREATE TABLE photo (name text PRIMARY KEY, image bytea NOT NULL);
                INSERT INTO photo SELECT 'big', decode(string_agg(md5(i::text), '' ORDER BY i), 'hex') FROM generate_series(1, \(Self.size / 16)) AS i
                """
        case .sqlite:
            return "CREATE TABLE photo (name TEXT PRIMARY KEY, image BLOB NOT NULL); INSERT INTO photo VALUES ('big', randomblob(\(Self.size)))"
        }
    }

    @Test("40 clients that do not read a 4 MiB file: memory grows by the spool's share, not the files; then every body arrives whole",
          arguments: SQLDialect.allCases)
    func slowWholeBodies(_ dialect: SQLDialect) async throws {
        guard let database = try TestDatabases.make(dialect, prefix: "spout_rel_whole") else { return }
        defer { database.drop() }
        try await onThread {
            let connection = try Drivers.driver(for: database.url).connect(readOnly: false, statistics: QueryStatistics())
            defer { connection.close() }
            try connection.executeScript(Self.seed(dialect))
        }
        let directory = try ServiceDirectory(
            databaseURL: database.url, extraEndpoints: ["photo.yaml": Self.endpoints(dialect)], shipped: false,
            poolSize: 8, acquireTimeoutMs: 30_000)
        defer { directory.remove() }
        let server = try await ServerProcess.serving(
            arguments: ["--config", directory.configFile, "--no-seed"],
            environment: ["SPOUT_LIMITS_MAX_CONNECTIONS_PER_ADDRESS": "0"])
        let port = server.port

        let reference = try await RawHTTP.get(port: port, "/photo/big")
        #expect(reference.status == 200 && reference.body.count == Self.size)
        // Every pooled connection reads the file once first: libpq keeps a buffer as large as
        // the largest message it read, per connection, which is the pool's memory, not the
        // readers'.
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<8 { group.addTask { try await RawHTTP.get(port: port, "/photo/big").status } }
            for try await status in group { #expect(status == 200) }
        }
        let baseline = try #require(server.residentBytes)

        // The clients ask and do not read; once every response has been read from the database
        // and handed over (spooled), the server's memory; then they read it all.
        // (Taken apart before any expectation: a failed one describes the values it names, and
        // the bodies are 160 MiB.)
        let (spooled, held, bodies) = try await onThread { () throws -> (Bool, Int, [HTTPTestResponse]) in
            let sockets = try (0..<Self.readers).map { _ in
                let socket = try RawSocket(port: port, timeout: 30, receiveBuffer: 4 * 1024)
                try socket.send(RawHTTP.request("GET", "/photo/big"))
                return socket
            }
            var spooled = false
            // Two feeder threads write the 40 bodies to their files: generous, for a loaded machine.
            let deadline = ContinuousClock.now + .seconds(90)
            while !spooled && ContinuousClock.now < deadline {
                let metrics = try RawHTTP.exchange(port: port, RawHTTP.request("GET", "/metrics"))?.text ?? ""
                let line = metrics.split(separator: "\n").first { $0.hasPrefix("spout_streams_spooled_total ") }
                spooled = (line?.split(separator: " ").last).flatMap { Double($0) }.map { $0 >= Double(Self.readers) } == true
                if !spooled { Thread.sleep(forTimeInterval: 0.2) }
            }
            let held = (server.residentBytes ?? 0) - baseline
            let bodies = try sockets.map { socket in
                try socket.receiveUntilClosed()
                return try RawHTTP.parse(socket.received)
            }
            return (spooled, held, bodies)
        }
        #expect(spooled, "the responses did not all spool")
        // Before, each client held its whole body: readers × 4 MiB (160 MiB).
        #expect(held < Self.readers * Self.size / 2, "RSS grew by \(held / 1024) KiB for \(Self.readers) slow readers")
        print("slow readers of whole bodies (\(dialect)): RSS grew by \(held / 1024) KiB")
        for response in bodies {
            let whole = response.status == 200 && response.isComplete && response.body == reference.body
            #expect(whole, "\(response.status), \(response.body.count) bytes")
        }
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
