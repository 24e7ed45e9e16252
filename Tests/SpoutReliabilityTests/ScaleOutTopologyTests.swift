import Foundation
import SpoutCore
import SpoutTestDatabases
import SpoutTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The scale-out topology of docs/scaling.md, started by `scripts/scale-out` on loopback ports:
/// nginx in front of two Spouts, each reading on a streaming replica and writing on the
/// primary, both through PgBouncer in transaction mode without prepared statements. And the
/// plainest form of it, on PostgreSQL and on SQLite: nginx in front of two `spout serve` on one
/// database with the default configuration (issue #66).
@Suite("Scale-out topology (scripts/scale-out)", .serialized)
struct ScaleOutTopologyTests {
    @Test("through nginx, two Spouts serve details, streams and writes, and the replica is in use",
          .enabled(if: ThrowawayPostgres.isAvailable && ThrowawayPgBouncer.isAvailable))
    func topologyServes() async throws {
        let script = TestFixtures.repositoryRoot.appendingPathComponent("scripts/scale-out").path
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-scale-out-\(UUID().uuidString)").path
        var environment = ChildProcess.inheritedEnvironment
        environment["SPOUT_BINARY"] = try ChildProcess.spoutExecutable()
        environment["SPOUT_JWT_SECRET"] = TestTokens.secret
        let started = try await ChildProcess.run(executable: script, arguments: ["start", directory], environment: environment)
        defer {
            if FileManager.default.fileExists(atPath: directory) { _ = try? ChildProcess.run(executable: script, arguments: ["stop", directory]) }
        }
        try #require(started.status == 0, "scripts/scale-out start failed: \(started.standardError)")
        let ports = try Self.ports(in: directory)
        let balancer = try #require(ports["nginx"])

        // Details through the balancer, spread over both Spouts.
        for _ in 0..<20 {
            let response = try await RawHTTP.get(port: balancer, "/employees/10004?details=titles&details=salaries")
            #expect(response.status == 200 && response.text.hasPrefix(#"{"employeeNumber":10004,"#), "\(response.status) \(response.text.prefix(100))")
        }
        for spout in ["spout-1.log", "spout-2.log"] {
            let log = (try? String(contentsOfFile: directory + "/" + spout, encoding: .utf8)) ?? ""
            #expect(log.contains("http.path=/employees/10004"), "\(spout) served no request")
        }
        let ready = try await RawHTTP.get(port: balancer, "/ready")
        #expect(ready.text.contains(#""status":"up","inUse":true"#), "\(ready.text)")

        // A whole stream through nginx (unbuffered), and a list with details.
        let salaries = try await RawHTTP.get(port: balancer, "/salaries")
        #expect(salaries.status == 200 && salaries.isComplete)
        let rows = try JSONSerialization.jsonObject(with: Data(salaries.body)) as? [Any]
        #expect((rows?.count ?? 0) > 1_000)
        let list = try await RawHTTP.get(port: balancer, "/departments/d005/employees?details=titles")
        #expect(list.status == 200 && list.isComplete)

        // A write on the primary, read back through the balancer within moments.
        let diane = try await TestTokens.authorization(sub: "Diane")
        let created = try await RawHTTP.postJSON(
            port: balancer, "/pets", #"{"name":"Scaly","species":"snake","sex":"f","birth":"2022-05-05"}"#, headers: [diane])
        #expect(created.status == 201, "\(created.text)")
        var seen = false
        for _ in 0..<100 where !seen {
            seen = try await RawHTTP.get(port: balancer, "/pets/Scaly").status == 200
            if !seen { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(seen)
        let deleted = try await RawHTTP.send(port: balancer, RawHTTP.request("DELETE", "/pets/Scaly", headers: [diane]))
        #expect(deleted.status == 204)

        // Every page of a paged endpoint, round-robin through the balancer (reads on the
        // replica, the cursor keys on the primary, all through PgBouncer): the unpaged rows.
        let unpaged = try await RawHTTP.get(port: balancer, "/departments/d005/employees")
        let paged = try await Self.walk(port: balancer, from: "/departments/d005/employees?pageSize=37")
        #expect(paged.pages > 2)
        #expect(paged.rows == (try JSONSerialization.jsonObject(with: Data(unpaged.body)) as? [Any]).map { $0 as NSArray })

        // The replica stops behind PgBouncer, whose connections to the Spouts stay up. The
        // requests that meet the gap wait for PgBouncer's query_wait_timeout (2 s in
        // scripts/scale-out) and are then answered from the primary; the others go straight
        // to the primary. Single rows and streams alike, no error.
        let stopped = try await ChildProcess.run(executable: ThrowawayPostgres.command, arguments: ["pause", directory + "/replica"])
        try #require(stopped.status == 0, "\(stopped.standardError)")
        var statuses: [Int] = []
        for _ in 0..<10 {
            statuses.append(try await RawHTTP.get(port: balancer, "/employees/10004?details=titles").status)
            statuses.append(try await RawHTTP.get(port: balancer, "/pets?owner=Gwen").status)
        }
        #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        let degraded = try await RawHTTP.get(port: balancer, "/ready")
        #expect(degraded.status == 200 && degraded.text.contains(#""status":"down""#), "\(degraded.text)")

        // `stop` leaves nothing running: PgBouncer included, which keeps the signal mask it
        // was started with (the first round's suite left one per run behind).
        let bouncerPID = try #require(Daemon.pid(fromFile: directory + "/pgbouncer.pid"))
        let stoppedAll = try await ChildProcess.run(executable: script, arguments: ["stop", directory])
        #expect(stoppedAll.status == 0, "\(stoppedAll.standardError)")
        let bouncerGone = try await eventually(within: .seconds(10)) { !Daemon.isRunning(bouncerPID) }
        #expect(bouncerGone, "PgBouncer \(bouncerPID) still runs after scripts/scale-out stop")
    }

    /// The default configuration (no cursorSecret; the JWT secret set as the shipped examples
    /// set it) on two `spout serve` processes sharing one database, behind nginx: every page
    /// walked round-robin gives the unpaged rows, a restart of both in the middle of the walk
    /// breaks nothing, a token writes on both, and each says at start that its cursor keys come
    /// from the database, with no warning.
    @Test("two spout serve on one database, default configuration: pages round-robin, a restart of both mid-walk, tokens on both",
          .enabled(if: RoundRobinNginx.isAvailable), arguments: SQLDialect.allCases)
    func manyInstancesByDefault(_ dialect: SQLDialect) async throws {
        guard let database = try TestDatabases.make(dialect, prefix: "spout_rel_scale") else { return }
        defer { database.drop() }
        try await onThread { try SampleData.seed(database.url, employees: 300) }
        let directory = try ServiceDirectory(databaseURL: database.url, poolSize: 4)
        defer { directory.remove() }
        let ports = [try ThrowawayPostgres.freePort(), try ThrowawayPostgres.freePort()]
        @Sendable func start(_ port: Int) async throws -> ServerProcess {
            try await ServerProcess.serving(arguments: ["--config", directory.configFile, "--no-seed", "--port", String(port)])
        }
        var instances = [try await start(ports[0]), try await start(ports[1])]
        let balancer = try await RoundRobinNginx.start(upstreams: ports)
        defer { balancer.stop() }
        do {
            #expect(instances.map(\.port) == ports)
            // The full list, unpaged, and the first page on instance 1: its next link opens on
            // instance 2 as it does on instance 1.
            let unpaged = try await RawHTTP.get(port: balancer.port, "/employees?hiredAfter=1980-01-01")
            try #require(unpaged.status == 200, "\(unpaged.text.prefix(300))")
            let everyRow = try #require(try JSONSerialization.jsonObject(with: Data(unpaged.body)) as? [Any])
            #expect(everyRow.count > 200)
            let first = try await instances[0].get("/employees?hiredAfter=1980-01-01&pageSize=7")
            let next = try #require(Self.nextLink(first), "\(first.status) \(first.text.prefix(200))")
            for instance in instances {
                let answer = try await instance.get(next)
                #expect(answer.status == 200, "instance on \(instance.port): \(answer.text.prefix(300))")
            }

            // The walk through nginx, round-robin: both instances restart after page 12.
            var rows: [Any] = []
            var target: String? = "/employees?hiredAfter=1980-01-01&pageSize=7"
            var pages = 0
            while let current = target {
                if pages == 12 {
                    for index in instances.indices {
                        await instances[index].stop()
                        instances[index] = try await start(ports[index])
                    }
                }
                let page = try await RawHTTP.get(port: balancer.port, current)
                try #require(page.status == 200, "page \(pages + 1): \(page.status) \(page.text.prefix(300))")
                rows += try #require(try JSONSerialization.jsonObject(with: Data(page.body)) as? [Any])
                target = Self.nextLink(page)
                pages += 1
            }
            #expect(pages == (everyRow.count + 6) / 7)
            #expect(rows as NSArray == everyRow as NSArray)
            // Round-robin indeed: each restarted instance served pages of the walk.
            for instance in instances {
                #expect(instance.log.components(separatedBy: "http.path=/employees ").count > 5, "instance on \(instance.port) served few pages")
            }

            // A token writes on both instances (directly and through nginx), and reads back on the other.
            let owner = try await TestTokens.authorization(sub: "Scaler")
            for (index, instance) in instances.enumerated() {
                let name = "Scaled\(index)"
                let created = try await RawHTTP.postJSON(
                    port: instance.port, "/pets", #"{"name":"\#(name)","species":"cat","sex":"f","birth":"2021-01-01"}"#, headers: [owner])
                #expect(created.status == 201, "instance on \(instance.port): \(created.text)")
                let other = instances[1 - index]
                #expect(try await other.get("/pets/\(name)").status == 200)
                let deleted = try await RawHTTP.send(port: other.port, RawHTTP.request("DELETE", "/pets/\(name)", headers: [owner]))
                #expect(deleted.status == 204, "\(deleted.text)")
            }
            for round in 0..<4 {
                let created = try await RawHTTP.postJSON(
                    port: balancer.port, "/pets", #"{"name":"Balanced\#(round)","species":"dog","sex":"m","birth":"2020-02-02"}"#,
                    headers: [owner])
                #expect(created.status == 201, "\(created.text)")
            }

            // A sync read after no change on one instance has a write the other made just
            // before it (on SQLite the first answers reads after no change from the WAL-index
            // header, which the other process's commit rewrites).
            var cursor = try Self.syncCursor(try await instances[0].get("/pets?owner=Scaler&since=0"))
            for round in 0..<5 {
                #expect(try await instances[0].get("/pets?owner=Scaler&since=\(cursor)").status == 200)
                let name = "Synced\(round)"
                let created = try await RawHTTP.postJSON(
                    port: instances[1].port, "/pets", #"{"name":"\#(name)","species":"dog","sex":"m","birth":"2020-02-02"}"#, headers: [owner])
                #expect(created.status == 201, "\(created.text)")
                let delta = try await instances[0].get("/pets?owner=Scaler&since=\(cursor)")
                #expect(delta.text.contains(#""name":"\#(name)""#), "round \(round): \(delta.text.prefix(300))")
                cursor = try Self.syncCursor(delta)
            }

            // At start, each said where its keys come from; nothing warned of cursorSecret or
            // of settings that differ.
            for instance in instances {
                let said = try await eventually(within: .seconds(10)) { instance.log.contains("page cursors: sealed with key 1 of spout_keys") }
                #expect(said, "\(instance.log.suffix(2_000))")
                let warnings = instance.log.split(separator: "\n").filter { $0.contains(" warning ") && ($0.contains("cursor") || $0.contains("instance")) }
                #expect(warnings.isEmpty, "\(warnings)")
                let ready = try await instance.get("/ready")
                #expect(ready.status == 200 && !ready.text.contains("settingsDiffer") && !ready.text.contains("cursorKeys"), "\(ready.text)")
            }
        } catch {
            for instance in instances { await instance.stop() }
            throw error
        }
        for instance in instances {
            #expect(instance.isRunning)
            await instance.stop()
        }
    }

    /// The cursor of a sync read's answer.
    static func syncCursor(_ response: HTTPTestResponse) throws -> String {
        try #require(response.status == 200, "\(response.status) \(response.text.prefix(300))")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        return try #require(object["cursor"] as? String)
    }

    /// The target of the `Link: <target>; rel="next"` field, if any.
    static func nextLink(_ response: HTTPTestResponse) -> String? {
        guard let link = response.header("link"), link.hasSuffix(#"rel="next""#), let start = link.firstIndex(of: "<"),
            let end = link.firstIndex(of: ">")
        else { return nil }
        return String(link[link.index(after: start)..<end])
    }

    /// Every row of every page from `target` on (following `rel="next"`), and the page count.
    static func walk(port: Int, from target: String) async throws -> (rows: NSArray, pages: Int) {
        var rows: [Any] = []
        var next: String? = target
        var pages = 0
        while let current = next {
            let page = try await RawHTTP.get(port: port, current)
            try #require(page.status == 200, "\(current): \(page.status) \(page.text.prefix(300))")
            rows += try #require(try JSONSerialization.jsonObject(with: Data(page.body)) as? [Any])
            next = Self.nextLink(page)
            pages += 1
        }
        return (rows as NSArray, pages)
    }

    /// `DIR/ports`: `name=port` lines.
    private static func ports(in directory: String) throws -> [String: Int] {
        let text = try String(contentsOfFile: directory + "/ports", encoding: .utf8)
        var ports: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2, let port = Int(parts[1]) { ports[String(parts[0])] = port }
        }
        return ports
    }
}
