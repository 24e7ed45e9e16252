import Foundation
import SpoutCore
import SpoutTestSupport
import Synchronization
import Testing

/// Behind Debian's PgBouncer (1.18) in `pool_mode = transaction`, with fewer server connections
/// than Spout has pooled connections, so consecutive transactions of one Spout connection land
/// on different server connections.
///
/// The first round failed there: named prepared statements (`spout_1`) and session settings
/// do not survive a transaction boundary. With `database.preparedStatements: false` every
/// request must work, with every guarantee (statement timeout, read-only GETs, cancel on
/// disconnect) and the same JSON bytes as straight to PostgreSQL.
@Suite("PgBouncer in transaction mode", .serialized)
struct PgBouncerTests {
    static let employees = 300

    @Test("without prepared statements every kind of request works behind PgBouncer, with PostgreSQL's own bytes",
          .enabled(if: ThrowawayPostgres.isAvailable && ThrowawayPgBouncer.isAvailable))
    func everythingWorksWithoutPreparedStatements() async throws {
        try await Self.withTopology(preparedStatements: false) { direct, bounced, cluster in
            let numbers = try await onThread {
                try SampleData.column(cluster.url(database: "employees"), "SELECT emp_no FROM employees ORDER BY emp_no LIMIT 48")
            }
            #expect(numbers.count == 48)

            // Detail load: 16 concurrent clients, each body the same as PostgreSQL's straight.
            let targets = numbers.map { "/employees/\($0)?details=titles&details=salaries" }
            var references: [String: [UInt8]] = [:]
            for target in targets { references[target] = try await direct.get(target).body }
            let expected = references
            let statuses = try await Self.load(bounced, targets: targets, clients: 16, rounds: 3) { target, response in
                response.status == 200 && response.body == expected[target]
            }
            #expect(statuses.mismatched == 0, "\(statuses)")
            #expect(statuses.total == targets.count * 3)
            // The direct instance read most of them on its shared connections; behind the
            // pooler nothing is shared (every request leased a connection of its own).
            _ = try await Self.load(direct, targets: targets, clients: 16, rounds: 1) { _, response in response.status == 200 }
            #expect(try SlowDownloadsTests.metric(direct, "spout_shared_reads_total").map { $0 > 0 } == true)
            #expect(try SlowDownloadsTests.metric(direct, "spout_shared_connections_open") == 2)
            #expect(try SlowDownloadsTests.metric(bounced, "spout_shared_reads_total") == nil)
            #expect(try SlowDownloadsTests.metric(bounced, "spout_shared_connections_open") == nil)

            // A list with details, a stream, a filtered list: whole, and byte for byte the same.
            for target in ["/departments/d005/employees?details=titles", "/salaries", "/employees?lastName=Facello", "/pets?owner=Gwen"] {
                let reference = try await direct.get(target)
                let response = try await bounced.get(target)
                #expect(reference.status == 200 && response.status == 200, "\(target): \(response.status) \(response.text.prefix(200))")
                #expect(response.isComplete && response.body == reference.body, "\(target) differs from PostgreSQL's own answer")
            }

            // Pets: create, update, delete.
            // With a token: its role and claims go in the same transaction, behind the pooler too.
            let diane = try await TestTokens.authorization(sub: "Diane")
            let created = try await RawHTTP.postJSON(
                port: bounced.port, "/pets", #"{"name":"Bouncy","species":"dog","sex":"m","birth":"2019-04-01"}"#, headers: [diane])
            #expect(created.status == 201, "\(created.text)")
            let updated = try await RawHTTP.postJSON(port: bounced.port, "/pets/Bouncy", #"{"owner":"Gwen"}"#, headers: [diane])
            #expect(updated.status == 200 && updated.text.contains(#""owner":"Gwen""#), "\(updated.text)")
            #expect(try await direct.get("/pets/Bouncy").text == updated.text)
            let deleted = try await RawHTTP.send(port: bounced.port, RawHTTP.request("DELETE", "/pets/Bouncy", headers: [try await TestTokens.authorization(sub: "Gwen")]))
            #expect(deleted.status == 204)
            #expect(try await bounced.get("/pets/Bouncy").status == 404)

            // What an offline app does, through the pooler: a sync read, a create sent twice
            // with one Idempotency-Key (applied once, the answer replayed), the delta holding
            // it, and an update with a stale If-Match refused with 412.
            let first = try await bounced.get("/pets?owner=Diane&since=0")
            #expect(first.status == 200, "\(first.text)")
            let cursor = try #require((try JSONSerialization.jsonObject(with: Data(first.body)) as? [String: Any])?["cursor"] as? String)
            let replayable = [diane, ("Idempotency-Key", "bouncer-create-1")]
            let once = try await RawHTTP.postJSON(port: bounced.port, "/pets", #"{"name":"Replayed","species":"cat"}"#, headers: replayable)
            let twice = try await RawHTTP.postJSON(port: bounced.port, "/pets", #"{"name":"Replayed","species":"cat"}"#, headers: replayable)
            #expect(once.status == 201 && twice.status == 201 && twice.body == once.body, "\(once.text) / \(twice.text)")
            #expect(twice.header("idempotent-replayed") == "true")
            let delta = try await bounced.get("/pets?owner=Diane&since=\(cursor)")
            #expect(delta.status == 200 && delta.text.contains(#""name":"Replayed""#), "\(delta.text)")
            let stale = try await RawHTTP.postJSON(
                port: bounced.port, "/pets/Replayed", #"{"species":"dog"}"#, headers: [diane, ("If-Match", #""stale""#)])
            #expect(stale.status == 412, "\(stale.status) \(stale.text)")

            // A bulk write's records (an insert: copied into a temporary table and inserted as
            // a set) go through the pooler in its one transaction; one refused in the middle
            // (Claws is Gwen's) names its line and commits none, and the connection serves on.
            let events = (1...3_000).map { #"{"name":"Bowser","date":"2024-01-01","type":"visit","remark":"bulk \#($0)"}"# }
            let bulk = [diane, ("Content-Type", "application/x-ndjson")]
            let added = try await RawHTTP.send(
                port: bounced.port, RawHTTP.request("POST", "/events/bulk", headers: bulk, body: Array(events.joined(separator: "\n").utf8)))
            #expect(added.status == 200 && added.text == #"{"records":3000,"changed":3000}"#, "\(added.status) \(added.text)")
            var refusedEvents = events
            refusedEvents[1_499] = #"{"name":"Claws","date":"2024-01-01","type":"visit"}"#
            let refused = try await RawHTTP.send(
                port: bounced.port, RawHTTP.request("POST", "/events/bulk", headers: bulk, body: Array(refusedEvents.joined(separator: "\n").utf8)))
            #expect(refused.status == 422 && refused.text.hasPrefix(#"{"line":1500,"#), "\(refused.status) \(refused.text)")
            let bulkRows = try await onThread {
                try SampleData.column(cluster.url(database: "employees"), "SELECT count(*) FROM event WHERE remark LIKE 'bulk %'")
            }
            #expect(bulkRows == ["3000"], "\(bulkRows)")

            // An upload of 3 MB (a bytea parameter of 6 MB of hex) reaches PostgreSQL whole
            // through the pooler, as it does straight.
            let upload = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
            let put = RawHTTP.request("PUT", "/echo", headers: [("Content-Type", "application/octet-stream")], body: upload)
            let uploadedDirect = try await RawHTTP.send(port: direct.port, put)
            let uploadedBounced = try await RawHTTP.send(port: bounced.port, put)
            #expect(uploadedDirect.status == 200 && uploadedDirect.text.hasPrefix(#"{"size":3000000,"md5":""#), "\(uploadedDirect.text)")
            #expect(uploadedBounced.status == 200 && uploadedBounced.text == uploadedDirect.text, "\(uploadedBounced.text)")

            // The endpoint's statement timeout applies (SET LOCAL in the request's transaction).
            let started = ContinuousClock.now
            let slow = try await bounced.get("/sleepy")
            #expect(slow.status == 504, "\(slow.status) \(slow.text)")
            #expect(ContinuousClock.now - started < .seconds(4))
            #expect(try await bounced.get("/pets/Fluffy").status == 200)

            // GETs stay read-only.
            let before = try await onThread { try SampleData.petsChecksum(cluster.url(database: "employees")) }
            let sneaky = try await bounced.get("/sneaky")
            #expect(sneaky.status == 500 && sneaky.text == #"{"error":"internal server error"}"#)
            #expect(try await onThread { try SampleData.petsChecksum(cluster.url(database: "employees")) } == before)

            // A client that leaves mid-stream ends its statement and its transaction on the server.
            try await onThread {
                let socket = try RawSocket(port: bounced.port, timeout: 30, receiveBuffer: 16 * 1024)
                try socket.send(RawHTTP.request("GET", "/big?rows=50000000"))
                try socket.receive(atLeast: 64 * 1024)
                try waitUntil("the stream's transaction is open") { try Self.streamBackends(cluster) == 1 }
                socket.close(reset: true)
                try waitUntil("the stream's transaction has ended") { try Self.streamBackends(cluster) == 0 }
            }
            #expect(!bounced.log.contains("prepared statement"))
        }
    }

    /// Proof that the topology is a real transaction pooler: with named prepared statements (the
    /// default) the same detail load fails, as it did in the field.
    @Test("with prepared statements the same load fails behind PgBouncer (the test's own check)",
          .enabled(if: ThrowawayPostgres.isAvailable && ThrowawayPgBouncer.isAvailable))
    func preparedStatementsFailBehindATransactionPooler() async throws {
        try await Self.withTopology(preparedStatements: true) { _, bounced, cluster in
            let numbers = try await onThread {
                try SampleData.column(cluster.url(database: "employees"), "SELECT emp_no FROM employees ORDER BY emp_no LIMIT 48")
            }
            let targets = numbers.map { "/employees/\($0)?details=titles&details=salaries" }
            let statuses = try await Self.load(bounced, targets: targets, clients: 16, rounds: 2) { _, response in
                response.status == 200
            }
            #expect(statuses.mismatched > 0, "no request failed: the pooler is not lending server connections per transaction")
        }
    }

    @Test("a test's PgBouncer stops when it is removed (its children start with no signal blocked)",
          .enabled(if: ThrowawayPostgres.isAvailable && ThrowawayPgBouncer.isAvailable))
    func pgBouncerStopsWhenRemoved() async throws {
        let cluster = try await onThread { try ThrowawayPostgres.create() }
        defer { cluster.remove() }
        let bouncer = try await onThread { try ThrowawayPgBouncer.start(in: cluster, serverConnections: 1) }
        let pid = try #require(bouncer.pid)
        #expect(Daemon.isRunning(pid))
        // PgBouncer keeps the mask it was started with: SIGTERM must not be blocked in it.
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let blockedLine = try #require(status.split(separator: "\n").first { $0.hasPrefix("SigBlk:") })
        let blocked = try #require(UInt64(blockedLine.dropFirst("SigBlk:".count).trimmingCharacters(in: .whitespaces), radix: 16))
        for signal in [SIGTERM, SIGINT] {
            #expect(blocked & (1 << UInt64(signal - 1)) == 0, "signal \(signal) is blocked in PgBouncer (SigBlk \(blockedLine))")
        }
        try await onThread { bouncer.remove() }
        #expect(!Daemon.isRunning(pid), "PgBouncer \(pid) outlived remove()")
    }

    // MARK: Topology

    /// A cluster with the sample data in database `employees`, PgBouncer in front of it with 4
    /// server connections, a Spout straight on the cluster and one through PgBouncer (pool 8).
    private static func withTopology(
        preparedStatements: Bool,
        _ body: (_ direct: ServerProcess, _ bounced: ServerProcess, _ cluster: ThrowawayPostgres) async throws -> Void
    ) async throws {
        let cluster = try await onThread { try ThrowawayPostgres.create() }
        defer { cluster.remove() }
        let bouncer = try await onThread { try ThrowawayPgBouncer.start(in: cluster, serverConnections: 4) }
        defer { bouncer.remove() }
        try await onThread {
            try cluster.psql("CREATE DATABASE employees")
            try SampleData.seed(cluster.url(database: "employees"), employees: Self.employees)
        }
        let directory = try ServiceDirectory(
            databaseURL: cluster.url(database: "employees"),
            extraEndpoints: ["streams.yaml": TestEndpoints.streams(.postgres), "bouncer.yaml": Self.endpoints],
            poolSize: 8, acquireTimeoutMs: 5_000)
        defer { directory.remove() }
        let arguments = ["--config", directory.configFile, "--no-seed"]
        let direct = try await ServerProcess.serving(arguments: arguments)
        let bounced = try await ServerProcess.serving(
            arguments: arguments,
            environment: [
                "SPOUT_DATABASE_URL": bouncer.url(database: "employees"),
                "SPOUT_DATABASE_PREPARED_STATEMENTS": preparedStatements ? "true" : "false",
                // Streams in batches of 200 rows: their later batches are fetched in binary
                // through the pooler (extended-protocol FETCHes), the direct server's in one
                // batch of text, and their bytes are compared.
                "SPOUT_DATABASE_FETCH_SIZE": "200",
            ])
        do {
            try await body(direct, bounced, cluster)
        } catch {
            await direct.stop()
            await bounced.stop()
            throw error
        }
        #expect(bounced.isRunning && direct.isRunning)
        await direct.stop()
        await bounced.stop()
    }

    static let endpoints = """
        paths:
          /sleepy:
            get:
              description: Slower than its own timeout.
              sql: SELECT pg_sleep(3) IS NULL AS slept
              result: scalar
              timeoutMs: 300
          /sneaky:
            get:
              description: A GET whose SQL writes.
              sql: WITH gone AS (DELETE FROM pet RETURNING name) SELECT name FROM gone
          /echo:
            put:
              description: What an upload held, as PostgreSQL received it.
              sql: SELECT length(:data) AS "size", md5(:data) AS "md5"
              result: object
              body: data
              maxBodyBytes: 4000000
              parameters:
                data: {type: bytes, required: true}

        """

    // MARK: Helpers

    struct LoadOutcome: Sendable, CustomStringConvertible {
        var total = 0
        var mismatched = 0
        var examples: [String] = []
        var description: String { "\(self.total) requests, \(self.mismatched) wrong: \(self.examples.prefix(5))" }
    }

    /// `clients` concurrent connections, each requesting every `clients`-th target `rounds`
    /// times; counts the responses `accept` rejects.
    private static func load(
        _ service: ServerProcess, targets: [String], clients: Int, rounds: Int,
        accept: @escaping @Sendable (String, HTTPTestResponse) -> Bool
    ) async throws -> LoadOutcome {
        try await withThrowingTaskGroup(of: LoadOutcome.self) { group in
            for client in 0..<clients {
                group.addTask {
                    var outcome = LoadOutcome()
                    for _ in 0..<rounds {
                        for target in targets.enumerated().filter({ $0.offset % clients == client }).map(\.element) {
                            let response = try await service.get(target)
                            outcome.total += 1
                            if !accept(target, response) {
                                outcome.mismatched += 1
                                outcome.examples.append("\(target): \(response.status) \(response.text.prefix(80))")
                            }
                        }
                    }
                    return outcome
                }
            }
            var total = LoadOutcome()
            for try await outcome in group {
                total.total += outcome.total
                total.mismatched += outcome.mismatched
                total.examples += outcome.examples
            }
            return total
        }
    }

    /// Backends of the cluster running or holding open a stream's cursor (`DECLARE`d by
    /// Spout, `FETCH`ed in batches) or its statement.
    private static func streamBackends(_ cluster: ThrowawayPostgres) throws -> Int {
        let count = try SampleData.column(cluster.url(database: "postgres"), """
            SELECT count(*) FROM pg_stat_activity
            WHERE datname = 'employees' AND backend_type = 'client backend'
              AND state IN ('active', 'idle in transaction', 'idle in transaction (aborted)')
              AND (query LIKE 'FETCH%' OR query LIKE '%generate_series%')
            """)
        return Int(count.first ?? "") ?? -1
    }
}

extension ThrowawayPostgres {
    /// A URL for `database` on this cluster, straight over TCP, as `user`.
    func url(database: String, user: String = "spout") -> String {
        "postgresql://\(user)@127.0.0.1:\(self.port)/\(database)"
    }
}
