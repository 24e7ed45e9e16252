import Foundation
import SpoutTestSupport
import Testing

/// The scale-out topology of docs/scaling.md, started by `scripts/scale-out` on loopback ports:
/// nginx in front of two Spouts, each reading on a streaming replica and writing on the
/// primary, both through PgBouncer in transaction mode without prepared statements.
@Suite("Scale-out topology (scripts/scale-out)", .serialized)
struct ScaleOutTopologyTests {
    @Test("through nginx, two Spouts serve details, streams and writes, and the replica is in use",
          .enabled(if: ThrowawayPostgres.isAvailable && ThrowawayPgBouncer.isAvailable))
    func topologyServes() async throws {
        let script = TestFixtures.repositoryRoot.appendingPathComponent("scripts/scale-out").path
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-scale-out-\(UUID().uuidString)").path
        var environment = ProcessInfo.processInfo.environment
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
