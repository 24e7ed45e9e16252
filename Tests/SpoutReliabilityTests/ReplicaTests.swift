import Foundation
import SpoutCore
import SpoutTestSupport
import Testing

/// `database.replicaUrls` with a real streaming replica (`pg_basebackup -R`): GETs run on the
/// replica, writes and `consistency: primary` endpoints on the primary, and while the replica
/// is down GETs fall back to the primary without an error; once it is back it is used again.
@Suite("Read replicas", .serialized)
struct ReplicaTests {
    @Test("GETs on the replica, writes on the primary, fallback while the replica is stopped or lagging, and back",
          .enabled(if: ThrowawayPostgres.isAvailable))
    func replicaServesReadsAndFallsBack() async throws {
        let (primary, replica) = try await Self.primaryAndReplica()
        defer {
            replica.remove()
            primary.remove()
        }
        try await Self.serving(
            primary: primary,
            environment: [
                "SPOUT_DATABASE_REPLICA_URLS": replica.url(database: "employees"), "SPOUT_DATABASE_REPLICA_MAX_LAG_MS": "1000",
            ]
        ) { service in
            // Reads run on the replica; `consistency: primary` on the primary.
            #expect(try await Self.whereRuns("/place", service: service) == "replica")
            #expect(try await Self.whereRuns("/place/primary", service: service) == "primary")
            let ready = try await service.get("/ready")
            #expect(ready.status == 200 && ready.text.contains(#""name":"replica 1","status":"up""#), "\(ready.text)")

            // Writes go to the primary; the replica shows them within a few seconds.
            let diane = try await TestTokens.authorization(sub: "Diane")
            let created = try await RawHTTP.postJSON(
                port: service.port, "/pets", #"{"name":"Echo","species":"bat","sex":"f","birth":"2020-02-02"}"#, headers: [diane])
            #expect(created.status == 201, "\(created.text)")
            #expect(try await onThread { try SampleData.column(primary.url(database: "employees"), "SELECT owner FROM pet WHERE name = 'Echo'") } == ["Diane"])
            var seen = false
            for _ in 0..<100 where !seen {
                seen = try await service.get("/pets/Echo").status == 200
                if !seen { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(seen, "the write never showed through GET")

            // The replica stops: every GET still answers, from the primary.
            try await onThread { try replica.stop() }
            var statuses: [Int] = []
            for target in Array(repeating: ["/pets?owner=Gwen", "/pets/Fluffy", "/employees?lastName=Facello"], count: 7).flatMap({ $0 }) {
                statuses.append(try await service.get(target).status)
            }
            #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
            #expect(try await Self.whereRuns("/place", service: service) == "primary")
            let degraded = try await service.get("/ready")
            #expect(degraded.status == 200 && degraded.text.contains(#""status":"down""#), "\(degraded.text)")

            // Back: used again once its retry interval has passed.
            try await onThread { try replica.start() }
            #expect(try await Self.waitUntilRuns(on: "replica", service: service, within: .seconds(30)) == "replica")

            // Lagging past database.replicaMaxLagMs: skipped until it has caught up.
            let synced = try await service.get("/pets?owner=Diane&since=0")
            let cursor = try #require((try JSONSerialization.jsonObject(with: Data(synced.body)) as? [String: Any])?["cursor"] as? String)
            try await onThread { try replica.psql("SELECT pg_wal_replay_pause()") }
            let written = try await RawHTTP.postJSON(
                port: service.port, "/pets", #"{"name":"Lag","species":"cat","sex":"m","birth":"2021-03-03"}"#, headers: [diane])
            #expect(written.status == 201)
            // A sync read never answers from the replica, which has not replayed the write.
            let delta = try await service.get("/pets?owner=Diane&since=\(cursor)")
            #expect(delta.status == 200 && delta.text.contains(#""name":"Lag""#), "\(delta.text)")
            #expect(
                try await Self.waitUntilRuns(on: "primary", service: service, within: .seconds(15)) == "primary",
                "a replica lagging past the limit was still used")
            let lagging = try await service.get("/ready")
            #expect(lagging.text.contains(#""problem":"lagging"#), "\(lagging.text)")
            try await onThread { try replica.psql("SELECT pg_wal_replay_resume()") }
            #expect(try await Self.waitUntilRuns(on: "replica", service: service, within: .seconds(30)) == "replica")
        }
    }

    @Test("a replica that stops answering is set aside: GETs answer from the primary once its wait is over, and it is used again after",
          .enabled(if: ThrowawayPostgres.isAvailable))
    func replicaThatStopsAnsweringIsSetAside() async throws {
        let (primary, replica) = try await Self.primaryAndReplica()
        defer {
            replica.remove()
            primary.remove()
        }
        let target = try #require(URLComponents(string: replica.url(database: "employees")))
        let proxy = try FreezingProxy(upstreamPort: target.port ?? 5432)
        defer { proxy.stop() }
        var proxied = target
        proxied.port = proxy.port
        try await Self.serving(
            primary: primary, statementTimeoutMs: 10_000,
            environment: ["SPOUT_DATABASE_REPLICA_URLS": proxied.string!, "SPOUT_DATABASE_ANSWER_GRACE_MS": "1000"]
        ) { service in
            #expect(try await Self.whereRuns("/place", service: service) == "replica")
            proxy.freeze()
            // Readiness asks each server for 2 s at most: the instance stays ready (the primary
            // answers), the replica is down; waiting for it (11 s) would time the client out.
            let ready = try await service.get("/ready", timeout: 6)
            #expect(ready.status == 200 && ready.text.contains(#""name":"replica 1","status":"down""#), "\(ready.text)")
            // The read waiting on the frozen replica gives up after its timeout and the grace
            // (10 s + 1 s), and is run again on the primary; the client's timeout (30 s) would
            // fail the test if it hung.
            #expect(try await Self.whereRuns("/place", service: service) == "primary")
            // Set aside: the next reads go to the primary at once.
            let started = ContinuousClock.now
            for _ in 0..<3 { #expect(try await Self.whereRuns("/place", service: service) == "primary") }
            // Waiting for the replica each time would take 33 s.
            #expect(ContinuousClock.now - started < .seconds(15), "reads still waited for the frozen replica")
            let metrics = try await service.get("/metrics").text
            #expect(metrics.contains(#"spout_database_not_answering_total{database="replica 1"}"#), "\(metrics)")

            proxy.thaw()
            #expect(try await Self.waitUntilRuns(on: "replica", service: service, within: .seconds(30)) == "replica")
        }
    }

    /// Runs `body` with Spout serving the shipped endpoints and ``endpoints`` on `primary`'s
    /// `employees` (the replicas named in `environment`), and checks it still runs after.
    private static func serving(
        primary: ThrowawayPostgres, statementTimeoutMs: Int = 30_000, environment: [String: String],
        _ body: (ServerProcess) async throws -> Void
    ) async throws {
        let directory = try ServiceDirectory(
            databaseURL: primary.url(database: "employees"), extraEndpoints: ["places.yaml": Self.endpoints], poolSize: 4,
            statementTimeoutMs: statementTimeoutMs)
        defer { directory.remove() }
        let service = try await ServerProcess.serving(arguments: ["--config", directory.configFile, "--no-seed"], environment: environment)
        do {
            try await body(service)
        } catch {
            await service.stop()
            throw error
        }
        #expect(service.isRunning)
        await service.stop()
    }

    /// A throwaway primary with the sample data in `employees`, and a streaming replica of it
    /// that has caught up; the caller removes both.
    private static func primaryAndReplica() async throws -> (primary: ThrowawayPostgres, replica: ThrowawayPostgres) {
        let primary = try await onThread { try ThrowawayPostgres.create() }
        do {
            try await onThread {
                try primary.psql("CREATE DATABASE employees")
                try SampleData.seed(primary.url(database: "employees"), employees: 20)
            }
            let replica = try await onThread { try primary.makeReplica() }
            do {
                try await onThread {
                    try waitUntil("the replica has the pets", within: .seconds(30)) {
                        (try? SampleData.column(replica.url(database: "employees"), "SELECT count(*) FROM pet"))?.first == "9"
                    }
                }
                return (primary, replica)
            } catch {
                replica.remove()
                throw error
            }
        } catch {
            primary.remove()
            throw error
        }
    }

    static let endpoints = """
        paths:
          /place:
            get:
              description: Which server answers a read.
              sql: SELECT CASE WHEN pg_is_in_recovery() THEN 'replica' ELSE 'primary' END AS place
              result: object
          /place/primary:
            get:
              description: The same, always on the primary.
              sql: SELECT CASE WHEN pg_is_in_recovery() THEN 'replica' ELSE 'primary' END AS place
              result: object
              consistency: primary

        """

    /// Sends GET `target` (`/place` or `/place/primary`) and returns the server that ran its statement, as
    /// that server says (a streaming replica is in recovery): "primary" or "replica". Asked
    /// of the statement itself rather than seen from outside in `pg_stat_activity`, which a
    /// sample can miss on a busy machine.
    private static func whereRuns(_ target: String, service: ServerProcess) async throws -> String {
        let response = try await service.get(target)
        #expect(response.status == 200, "\(target): \(response.status) \(response.text)")
        let object = try JSONSerialization.jsonObject(with: Data(response.text.utf8)) as? [String: Any]
        return object?["place"] as? String ?? ""
    }

    /// ``whereRuns(_:service:)`` of `/place` until it answers `place`, or `limit` has passed.
    private static func waitUntilRuns(on place: String, service: ServerProcess, within limit: Duration) async throws -> String {
        try await poll(within: limit, every: .milliseconds(50), { try await Self.whereRuns("/place", service: service) }, until: { $0 == place })
    }
}
