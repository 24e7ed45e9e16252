import Foundation
import HTTPTypes
import SpoutCore
import SpoutDrivers
import SpoutEndpoints
import SpoutHTTP
import SpoutTestSupport
import Synchronization
import Testing

/// A primary that fails over under a write load: two clusters on loopback, a primary and its
/// synchronous standby; Spout is given both hosts (`target_session_attrs=read-write` for
/// writes, each standby as a read replica with `target_session_attrs=standby`). The primary is
/// stopped hard (`pg_ctl stop -m immediate`) and the standby promoted while clients write pets
/// with idempotency keys, retrying each 503 with the same key after its `Retry-After`, and
/// read. Then the old primary rejoins as a synchronous standby (`pg_rewind`), serves reads,
/// and the whole failover runs again the other way, onto it.
@Suite("Failover", .serialized)
struct FailoverTests {
    /// How long after a promotion writes may take to succeed again, and the longest reads
    /// may fail (docs/scaling.md, "Failover").
    static let bound: Duration = .seconds(10)

    @Test("primary stopped hard, synchronous standby promoted: acknowledged writes kept once, 503s then 201s, reads served; the old primary rejoins",
          .enabled(if: ThrowawayPostgres.isAvailable))
    func failoverUnderWriteLoad() async throws {
        let durable = ["synchronous_commit": "on", "full_page_writes": "on", "wal_log_hints": "on", "wal_keep_size": "256MB"]
        let first = try await onThread { try ThrowawayPostgres.create(settings: durable) }
        defer { first.remove() }
        try await onThread {
            try first.psql("CREATE DATABASE employees")
            try SampleData.seed(first.url(database: "employees"), employees: 20)
        }
        // The standby takes over with no standby of its own yet: it must not wait for one.
        let second = try await onThread { try first.makeReplica(settings: durable.merging(["synchronous_standby_names": ""]) { $1 }) }
        defer { second.remove() }
        // Synchronous once the standby is there (before, every commit would wait for one).
        try await onThread {
            try first.psql("ALTER SYSTEM SET synchronous_standby_names = '*'")
            try first.psql("SELECT pg_reload_conf()")
        }
        try await Self.waitUntilSynchronous(standby: second, of: first)

        let hosts = "127.0.0.1:\(first.port),127.0.0.1:\(second.port)"
        let directory = try ServiceDirectory(
            databaseURL: "postgresql://spout@\(hosts)/employees?target_session_attrs=read-write",
            extraEndpoints: ["port.yaml": Self.endpoints], poolSize: 4)
        defer { directory.remove() }
        let replicas = [first, second].map { "postgresql://spout@127.0.0.1:\($0.port)/employees?target_session_attrs=standby" }
        let service = try await ServerProcess.serving(
            arguments: ["--config", directory.configFile, "--no-seed"],
            environment: ["SPOUT_DATABASE_REPLICA_URLS": replicas.joined(separator: ",")])
        do {
            let ready = try await service.get("/ready")
            #expect(ready.text.contains(#""primary":"127.0.0.1:\#(first.port)""#), "\(ready.text)")

            // First failover: the first cluster fails, the second takes over.
            try await Self.failOver(from: first, to: second, service: service, round: "a")
            #expect(try await service.get("/ready").text.contains(#""primary":"127.0.0.1:\#(second.port)""#))
            #expect(service.log.contains("database primary moved from 127.0.0.1:\(first.port) to 127.0.0.1:\(second.port)"), "\(service.log)")

            // The old primary rejoins as a synchronous standby and serves reads again, with
            // no restart of Spout (its replica URL is tried again every 5 s).
            try await onThread {
                try first.rejoin(following: second)
                try second.psql("ALTER SYSTEM SET synchronous_standby_names = '*'")
                try second.psql("SELECT pg_reload_conf()")
            }
            try await Self.waitUntilSynchronous(standby: first, of: second)
            let port = try await poll(within: .seconds(30), every: .milliseconds(100), { try await Self.port(answering: service) }, until: {
                $0 == first.port
            })
            #expect(port == first.port, "reads never reached the rejoined standby")

            // And it can take over in turn: the second failover, the other way.
            // As a failover manager would: the standby to promote will have no standby of its
            // own at first, so it must not wait for one (Patroni's synchronous_mode does this).
            try await onThread {
                try first.psql("ALTER SYSTEM SET synchronous_standby_names = ''")
                try first.psql("SELECT pg_reload_conf()")
            }
            try await Self.failOver(from: second, to: first, service: service, round: "b")
            #expect(try await service.get("/ready").text.contains(#""primary":"127.0.0.1:\#(first.port)""#))
            let metrics = try await service.get("/metrics").text
            #expect(metrics.contains(#"spout_database_server_changes_total{database="primary"} 2"#), "\(metrics)")
        } catch {
            await service.stop()
            throw error
        }
        #expect(service.isRunning)
        await service.stop()
    }

    @Test("a write that reaches a standby is 503 database server read only and its connections are retired; a read-only lease's write stays 500",
          .enabled(if: ThrowawayPostgres.isAvailable))
    func writesOnAStandby() async throws {
        let primary = try await onThread { try ThrowawayPostgres.create() }
        defer { primary.remove() }
        try await onThread { try primary.psql("CREATE TABLE note (text text)") }
        let standby = try await onThread { try primary.makeReplica() }
        defer { standby.remove() }
        // A URL that names the standby alone: what a pooler or a stale DNS name would give.
        let database = try Drivers.open(standby.url(database: "postgres"))
        defer { database.close() }
        let insert = try ParsedSQL.cached("INSERT INTO note VALUES ('x')", dialect: .postgres)
        let session = RequestSession(role: nil, claimsJSON: #"{"sub":"Diane"}"#)
        // BEGIN READ WRITE refused (0A000), with and without a request session; a write
        // outside a transaction on a writable session (25006).
        for work in [
            DatabaseWork(readOnly: false, transaction: .always(readOnly: false)),
            DatabaseWork(readOnly: false, transaction: .always(readOnly: false), session: session),
            DatabaseWork(readOnly: false),
        ] {
            let error = await #expect(throws: DatabaseError.self) {
                try await database.withSession(work) { session in try await session.run { try $0.execute(insert, []) } }
            }
            #expect(error?.code == .serverReadOnly, "\(work): \(String(reflecting: error))")
            #expect(error.map { ErrorResponse(for: $0).status } == .serviceUnavailable)
            #expect(error.map { ErrorResponse(for: $0).headers[.retryAfter] } == "1")
            #expect(database.poolState.open == 0, "the connection to the standby was lent again")
        }
        // A GET whose SQL writes is the endpoint's mistake, wherever it runs.
        let readOnly = await #expect(throws: DatabaseError.self) {
            try await database.withSession(DatabaseWork(readOnly: true)) { session in try await session.run { try $0.execute(insert, []) } }
        }
        #expect(readOnly?.code == .readOnly, "\(String(reflecting: readOnly))")
        #expect(readOnly.map { ErrorResponse(for: $0).status } == .internalServerError)
        #expect(database.server == "127.0.0.1:\(standby.port)")
    }

    /// Runs the write and read load, stops `old` hard once writes are acknowledged, promotes
    /// `new`, and lets the load run until writes have succeeded again; then checks what the
    /// suite promises. Writes are named `failover-<round>-<writer>-<n>`.
    private static func failOver(
        from old: ThrowawayPostgres, to new: ThrowawayPostgres, service: ServerProcess, round: String
    ) async throws {
        let load = Load()
        let token = try await TestTokens.authorization(sub: "Diane")
        let writers = (0..<4).map { writer in
            Task { try await load.write(port: service.port, name: "failover-\(round)-\(writer)", authorization: token) }
        }
        let readers = ["/pets/Fluffy", "/pets?owner=Gwen"].map { target in
            Task { try await load.read(port: service.port, target) }
        }
        do {
            _ = try await poll(within: .seconds(60), every: .milliseconds(20), { load.acknowledged }, until: { $0 >= 20 })
            let crashed = ContinuousClock.now
            try await onThread { try old.crash() }
            try await onThread { try new.promote() }
            let promoted = ContinuousClock.now
            load.mark(promotedAt: promoted)
            _ = try await poll(within: .seconds(60), every: .milliseconds(20), { load.acknowledgedAfterPromotion }, until: { $0 >= 20 })
            load.stop()
            for writer in writers { try await writer.value }
            for reader in readers { try await reader.value }

            let outcome = load.outcome
            // Never a 500, a 409 (a retry applied twice) or a hang; 503 only while switching.
            #expect(outcome.statuses.subtracting([201, 503]).isEmpty, "\(outcome.statuses)")
            #expect(outcome.failedWrites.isEmpty, "writes never acknowledged: \(outcome.failedWrites)")
            #expect(outcome.writeRefusals > 0, "no write met the failover: the test proved nothing")
            let resumed = try #require(outcome.firstAcknowledgementAfterPromotion) - promoted
            #expect(resumed <= Self.bound, "writes succeeded again \(resumed) after the promotion (crash to promotion: \(promoted - crashed))")
            #expect(outcome.longestReadOutage <= Self.bound, "reads failed for \(outcome.longestReadOutage)")
            #expect(outcome.readStatuses.subtracting([200, 503]).isEmpty, "\(outcome.readStatuses)")

            // Every write answered 201 is on the new primary, exactly once, and no other.
            let stored = try await onThread {
                try SampleData.column(new.url(database: "employees"), "SELECT name FROM pet WHERE name LIKE 'failover-\(round)-%' ORDER BY name")
            }
            #expect(stored == outcome.acknowledgedNames.sorted(), "acknowledged writes lost or extra rows")
        } catch {
            load.stop()
            for task in writers { task.cancel() }
            for task in readers { task.cancel() }
            throw error
        }
    }

    /// Waits until `standby` streams to `primary` as its synchronous standby.
    private static func waitUntilSynchronous(standby: ThrowawayPostgres, of primary: ThrowawayPostgres) async throws {
        try await onThread {
            try waitUntil("the standby on port \(standby.port) is synchronous", within: .seconds(30)) {
                (try? SampleData.column(primary.url(database: "postgres"), "SELECT sync_state FROM pg_stat_replication"))?.first == "sync"
            }
        }
    }

    static let endpoints = """
        paths:
          /port:
            get:
              description: The port of the server that answers a read.
              sql: SELECT inet_server_port() AS port
              result: object

        """

    /// The port of the server a GET `/port` ran on.
    private static func port(answering service: ServerProcess) async throws -> Int {
        let response = try await service.get("/port")
        guard response.status == 200 else { return 0 }
        let object = try JSONSerialization.jsonObject(with: Data(response.text.utf8)) as? [String: Any]
        return object?["port"] as? Int ?? 0
    }
}

/// The clients of ``FailoverTests``: writers that create pets with an `Idempotency-Key` each and
/// send a refused write again, with the same key, after its `Retry-After`, and readers; what
/// each answer was and when.
private final class Load: Sendable {
    struct Outcome {
        var statuses: Set<Int> = []
        var readStatuses: Set<Int> = []
        var writeRefusals = 0
        var acknowledgedNames: [String] = []
        var failedWrites: [String] = []
        var firstAcknowledgementAfterPromotion: ContinuousClock.Instant?
        var longestReadOutage: Duration = .zero
    }

    private struct State {
        var stopped = false
        var promotedAt: ContinuousClock.Instant?
        var acknowledgedAfterPromotion = 0
        var outcome = Outcome()
        /// When the reads' current run of failures began, by target.
        var failingSince: [String: ContinuousClock.Instant] = [:]
    }

    private let state = Mutex(State())

    var acknowledged: Int { self.state.withLock { $0.outcome.acknowledgedNames.count } }
    var acknowledgedAfterPromotion: Int { self.state.withLock { $0.acknowledgedAfterPromotion } }
    var outcome: Outcome { self.state.withLock { $0.outcome } }
    private var isStopped: Bool { self.state.withLock { $0.stopped } }

    func mark(promotedAt instant: ContinuousClock.Instant) {
        self.state.withLock { $0.promotedAt = instant }
    }

    func stop() {
        self.state.withLock { $0.stopped = true }
    }

    /// Writes pets `<prefix>-0`, `<prefix>-1`, … one after the other until stopped; each is
    /// sent again after a 503 until it is acknowledged, for a minute at most.
    func write(port: Int, name prefix: String, authorization: (String, String)) async throws {
        var number = 0
        while !self.isStopped {
            let name = "\(prefix)-\(number)"
            number += 1
            let body = #"{"name":"\#(name)","species":"dog","sex":"f","birth":"2020-01-01"}"#
            let giveUp = ContinuousClock.now + .seconds(60)
            var acknowledged = false
            while !acknowledged && ContinuousClock.now < giveUp {
                let response = try await RawHTTP.postJSON(port: port, "/pets", body, headers: [authorization, ("Idempotency-Key", name)])
                let now = ContinuousClock.now
                acknowledged = response.status == 201
                self.state.withLock { state in
                    state.outcome.statuses.insert(response.status)
                    if acknowledged {
                        state.outcome.acknowledgedNames.append(name)
                        if let promoted = state.promotedAt, now > promoted {
                            state.acknowledgedAfterPromotion += 1
                            if state.outcome.firstAcknowledgementAfterPromotion == nil { state.outcome.firstAcknowledgementAfterPromotion = now }
                        }
                    } else if response.status == 503 {
                        state.outcome.writeRefusals += 1
                    }
                }
                guard !acknowledged else { break }
                guard response.status == 503 else { return }  // anything else fails the test
                let delay = response.header("Retry-After").flatMap { Int($0) } ?? 1
                try await Task.sleep(for: .seconds(delay))
            }
            if !acknowledged { self.state.withLock { $0.outcome.failedWrites.append(name) } }
        }
    }

    /// GETs `target` until stopped, noting the longest time its answers were not 200.
    func read(port: Int, _ target: String) async throws {
        while !self.isStopped {
            let response = try await RawHTTP.get(port: port, target)
            let now = ContinuousClock.now
            self.state.withLock { state in
                state.outcome.readStatuses.insert(response.status)
                if response.status == 200 {
                    if let since = state.failingSince.removeValue(forKey: target) {
                        state.outcome.longestReadOutage = max(state.outcome.longestReadOutage, now - since)
                    }
                } else if state.failingSince[target] == nil {
                    state.failingSince[target] = now
                }
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        // A run of failures still going at the end counts up to now.
        self.state.withLock { state in
            if let since = state.failingSince.removeValue(forKey: target) {
                state.outcome.longestReadOutage = max(state.outcome.longestReadOutage, ContinuousClock.now - since)
            }
        }
    }
}
