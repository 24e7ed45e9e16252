import Foundation
import SpoutCore
import SpoutTestDatabases
import SpoutTestSupport
import Testing

/// `GET /metrics` after a known mix of requests, parsed by the Prometheus project's own Python
/// client parser (`prometheus_client.parser`, installed by scripts/test), through real sockets.
@Suite("Prometheus metrics", .serialized)
struct MetricsTests {
    static let parser = PythonModule(module: "prometheus_client.parser", package: "prometheus-client")
    static var parserAvailable: Bool { Self.parser.isAvailable }
    static var parserRequired: Bool { Self.parser.isRequired }

    @Test("a known mix of 2xx, 4xx, 503, 504 and a disconnect mid-stream is counted exactly",
          .enabled(if: TestDatabases.postgresEnabled && (Self.parserAvailable || Self.parserRequired)))
    func countsAKnownMix() async throws {
        try #require(Self.parserAvailable, "python3 module prometheus_client missing: python3 -m pip install prometheus-client")
        try await StreamsService.with(
            .postgres, prefix: "spout_rel_metrics", extraEndpoints: ["slow.yaml": TestEndpoints.slow(.postgres, timeoutMs: 300)],
            // The pool alone (no shared connections): its waits, timeouts and leases are counted.
            // The acquire timeout also bounds opening the one connection, which a loaded machine
            // (the suite's lanes at once) can take a few hundred milliseconds to do.
            poolSize: 1, acquireTimeoutMs: 1_000, statementTimeoutMs: 0,
            environment: ["SPOUT_TIMING_HEADER": "true", "SPOUT_DATABASE_SHARED_READERS": "0"]
        ) { service in
            for _ in 0..<3 { #expect(try await service.get("/one").status == 200) }
            // server.timingHeader: a single row, sent whole, read event-driven on PostgreSQL.
            let timing = try await service.get("/one").header("server-timing") ?? ""
            #expect(timing.wholeMatch(of: /acquire;dur=\d+\.\d{3}, db;dur=\d+\.\d{3}, encode;dur=\d+\.\d{3}/) != nil, "\(timing)")
            #expect(try await service.get("/big?rows=many").status == 400)
            #expect(try await service.get("/nowhere").status == 404)
            #expect(try await service.get("/slow").status == 504)
            // The only connection is held: /one waits the acquire timeout, then 503.
            let hold = Task { try await service.get("/hold?seconds=2") }
            #expect(try await eventually { try SlowDownloadsTests.metric(service, "spout_pool_connections_in_use") == 1 })
            #expect(try await service.get("/one").status == 503)
            #expect(try await hold.value.status == 200)
            // A client that leaves mid-stream.
            try await onThread {
                let socket = try RawSocket(port: service.port, timeout: 30, receiveBuffer: 16 * 1024)
                try socket.send(RawHTTP.request("GET", "/big"))
                try socket.receive(atLeast: 64 * 1024)
                socket.close(reset: true)
            }
            // The stream ends once its statement is cancelled and the lease released.
            var samples: [Sample] = []
            for _ in 0..<100 {
                samples = try await Self.scrape(service.port)
                if Self.value(samples, "spout_streams_in_flight") == 0 && Self.value(samples, "spout_client_disconnects_total") == 1 { break }
                try await Task.sleep(for: .milliseconds(100))
            }

            func requests(_ route: String, _ status: Int) -> Double? {
                Self.value(samples, "spout_http_requests_total", ["route": route, "method": "GET", "status": String(status)])
            }
            #expect(requests("/one", 200) == 4)
            #expect(requests("/big", 400) == 1)
            #expect(requests("unmatched", 404) == 1)
            #expect(requests("/slow", 504) == 1)
            #expect(requests("/one", 503) == 1)
            #expect(requests("/hold", 200) == 1)
            #expect(requests("/big", 200) == 1, "the abandoned stream is counted under its status")
            #expect(Self.value(samples, "spout_http_request_duration_seconds_count", ["route": "/one", "method": "GET", "status": "200"]) == 4)
            #expect(Self.value(samples, "spout_http_time_to_first_byte_seconds_count", ["route": "/big"]) == 1)
            #expect(Self.value(samples, "spout_statement_timeouts_total") == 1)
            #expect(Self.value(samples, "spout_pool_acquire_timeouts_total") == 1)
            #expect(Self.value(samples, "spout_client_disconnects_total") == 1)
            #expect((Self.value(samples, "spout_statement_cancels_total") ?? 0) >= 1)
            #expect(Self.value(samples, "spout_streams_in_flight") == 0)
            #expect((Self.value(samples, "spout_http_response_bytes_total") ?? 0) > 64 * 1024)
            #expect((Self.value(samples, "spout_rows_sent_total") ?? 0) >= 3)
            #expect(Self.value(samples, "spout_pool_connections_open", ["database": "primary"]).map { $0 <= 1 } == true)
            #expect(Self.value(samples, "spout_pool_waiters", ["database": "primary"]) == 0)
            #expect((Self.value(samples, "spout_pool_acquire_wait_seconds_count", ["database": "primary"]) ?? 0) >= 5)
            // The process metrics under the names the Prometheus client libraries use.
            #expect((Self.value(samples, "process_resident_memory_bytes") ?? 0) > 1_000_000)
            #expect((Self.value(samples, "process_virtual_memory_bytes") ?? 0) >= (Self.value(samples, "process_resident_memory_bytes") ?? .infinity))
            #expect((Self.value(samples, "process_open_fds") ?? 0) > 3)
            #expect((Self.value(samples, "process_max_fds") ?? 0) >= (Self.value(samples, "process_open_fds") ?? .infinity))
            #expect((Self.value(samples, "process_cpu_seconds_total") ?? 0) > 0)
            #expect((Self.value(samples, "process_start_time_seconds") ?? 0) > 1_700_000_000)
            #expect(!samples.contains { $0.name.hasPrefix("spout_process_") })
            // Route templates only: never a raw path.
            #expect(!samples.contains { $0.labels["route"]?.contains("?") == true || $0.labels["route"] == "/nowhere" })
            // After 503s, 504s and a cancel as well, Prometheus's linter finds nothing
            // (PromtoolTests requires promtool; here it is checked when installed).
            if Promtool.isAvailable {
                let lint = try await Promtool.checkMetrics(try await RawHTTP.get(port: service.port, "/metrics").body)
                #expect(lint.status == 0 && lint.output.isEmpty, "promtool check metrics: status \(lint.status)\n\(lint.output)")
            }
        }
    }

    @Test("on an admin port of their own the metrics leave the main port; off, they are nowhere")
    func adminPortAndOff() async throws {
        try #require(Self.parserAvailable || !Self.parserRequired)
        let database = TestDatabases.makeSQLiteDatabase()
        try await onThread { _ = try SampleData.column(database.url, "SELECT 1") }
        defer { database.drop() }
        let directory = try ServiceDirectory(databaseURL: database.url, extraEndpoints: ["streams.yaml": TestEndpoints.streams(.sqlite)], shipped: false)
        defer { directory.remove() }
        let adminPort = try ThrowawayPostgres.freePort()
        let separate = try await ServerProcess.serving(
            arguments: ["--config", directory.configFile, "--no-seed"],
            environment: ["SPOUT_METRICS_PORT": String(adminPort), "SPOUT_LOG_FORMAT": "json"])
        let one = try await separate.get("/one")
        #expect(one.status == 200 && one.header("server-timing") == nil, "Server-Timing is off by default")
        #expect(try await separate.get("/metrics").status == 404)
        let scraped = try await RawHTTP.get(port: adminPort, "/metrics")
        #expect(scraped.status == 200 && scraped.header("content-type")?.hasPrefix("text/plain; version=0.0.4") == true)
        #expect(scraped.text.contains(#"spout_http_requests_total{route="/one",method="GET",status="200"} 1"#), "\(scraped.text.prefix(400))")
        // SPOUT_LOG_FORMAT=json: every line of the log is a JSON object; the access log's
        // fields keep their names, numbers as numbers.
        // The server writes a request's log line after its response (StandardErrorWriter).
        #expect(try await eventually { separate.log.contains(#""http.path":"/one""#) })
        let lines = separate.log.split(separator: "\n").filter { !$0.isEmpty }
        let entries = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(entries.count == lines.count && !entries.isEmpty, "lines that are not JSON: \(lines.prefix(3))")
        let access = entries.first { $0["message"] as? String == "request" && $0["http.path"] as? String == "/one" }
        #expect(access?["http.status"] as? Int == 200 && access?["level"] as? String == "info", "\(String(describing: access))")
        #expect(access?["request.id"] is String && access?["duration.ms"] is Double && access?["time"] is String)
        await separate.stop()

        let off = try await ServerProcess.serving(
            arguments: ["--config", directory.configFile, "--no-seed"], environment: ["SPOUT_METRICS_ENABLED": "false"])
        #expect(try await off.get("/metrics").status == 404)
        await off.stop()
    }

    // MARK: Parsing

    struct Sample: Sendable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    /// Scrapes `/metrics` and parses it with `prometheus_client.parser`; a malformed exposition
    /// fails the parser and so the test.
    static func scrape(_ port: Int) async throws -> [Sample] {
        let response = try await RawHTTP.get(port: port, "/metrics")
        try #require(response.status == 200)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("spout-metrics-\(UUID().uuidString).txt").path
        try Data(response.body).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let script = """
            import json, sys
            from prometheus_client.parser import text_string_to_metric_families
            out = []
            for family in text_string_to_metric_families(open(sys.argv[1]).read()):
                for s in family.samples:
                    out.append({"name": s.name, "labels": s.labels, "value": s.value})
            print(json.dumps(out))
            """
        let result = try await ChildProcess.run(executable: "/usr/bin/env", arguments: ["python3", "-c", script, file])
        try #require(result.status == 0, "prometheus_client could not parse /metrics: \(result.standardError)")
        let decoded = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [[String: Any]] ?? []
        return decoded.map {
            Sample(name: $0["name"] as? String ?? "", labels: $0["labels"] as? [String: String] ?? [:], value: $0["value"] as? Double ?? .nan)
        }
    }

    /// The value of the sample `name` whose labels include `labels`; nil when there is none.
    static func value(_ samples: [Sample], _ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { sample in
            sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value }
        }?.value
    }
}
