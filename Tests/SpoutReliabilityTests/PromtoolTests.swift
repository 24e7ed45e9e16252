import Foundation
import SpoutCore
import SpoutTestSupport
import Testing

/// `GET /metrics` of a live `spout serve`, after traffic of every kind, checked by Prometheus's
/// own linter: `promtool check metrics` must exit 0 and print nothing (no family without HELP
/// text, no counter without `_total`, no unit that is not a base unit, ...).
@Suite("promtool check metrics", .serialized)
struct PromtoolTests {
    @Test("the linter finds nothing in /metrics after requests, errors, a stream and a disconnect",
          .enabled(if: Promtool.isAvailable || Promtool.isRequired, Promtool.missing))
    func metricsPassTheLinter() async throws {
        try #require(Promtool.isAvailable, Promtool.missing)
        try await StreamsService.with(.sqlite, prefix: "spout_rel_promtool", extraEndpoints: [:], poolSize: 2, statementTimeoutMs: 0) { service in
            let scraped = try await Self.scrapeAfterTraffic(service)
            let text = scraped.text
            // The families the traffic made are all there, so the linter saw each kind.
            for family in [
                "spout_http_requests_total", "spout_http_request_duration_seconds", "spout_http_time_to_first_byte_seconds",
                "spout_pool_acquire_wait_seconds", "spout_pool_connections_open", "spout_database_server_changes_total", "spout_streams_in_flight",
                "process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds",
            ] {
                #expect(text.contains("\n# HELP \(family) ") || text.hasPrefix("# HELP \(family) "), "no HELP for \(family)")
            }
            #expect(!text.contains("spout_process_"), "the process metrics have their standard names")

            let lint = try await Promtool.checkMetrics(scraped.body)
            #expect(lint.status == 0 && lint.output.isEmpty, "promtool check metrics: status \(lint.status)\n\(lint.output)")
        }
    }

    @Test("the linter does flag an exposition without HELP text (this suite can fail)",
          .enabled(if: Promtool.isAvailable || Promtool.isRequired, Promtool.missing))
    func theLinterFlagsMissingHelp() async throws {
        try #require(Promtool.isAvailable, Promtool.missing)
        let lint = try await Promtool.checkMetrics(Array("# TYPE spout_things counter\nspout_things 1\n".utf8))
        #expect(lint.status != 0)
        #expect(lint.output.contains("no help text"), "\(lint.output)")
    }

    /// Sends `service` (a ``StreamsService``) traffic of every kind — requests, a 404, a 400, a
    /// whole stream, a client that leaves mid-stream — then scrapes `/metrics`.
    static func scrapeAfterTraffic(_ service: ServerProcess) async throws -> HTTPTestResponse {
        for _ in 0..<3 { #expect(try await service.get("/one").status == 200) }
        #expect(try await service.get("/nowhere").status == 404)
        #expect(try await service.get("/big?rows=many").status == 400)
        let stream = try await service.get("/big?rows=20000")
        #expect(stream.status == 200 && stream.isComplete && stream.body.count > 20_000 * 200)
        try await onThread {
            let socket = try RawSocket(port: service.port, timeout: 30, receiveBuffer: 16 * 1024)
            try socket.send(RawHTTP.request("GET", "/big"))
            try socket.receive(atLeast: 64 * 1024)
            socket.close(reset: true)
        }
        let scraped = try await RawHTTP.get(port: service.port, "/metrics")
        try #require(scraped.status == 200)
        return scraped
    }

    @Test("process_start_time_seconds is this server's start, in seconds since the epoch")
    func processStartTime() async throws {
        let before = Date().timeIntervalSince1970
        try await StreamsService.with(.sqlite, prefix: "spout_rel_start", extraEndpoints: [:], poolSize: 1, statementTimeoutMs: 0) { service in
            let text = try await RawHTTP.get(port: service.port, "/metrics").text
            let line = text.split(separator: "\n").first { $0.hasPrefix("process_start_time_seconds ") }
            let started = try #require(line.flatMap { Double($0.split(separator: " ")[1]) }, "\(text.prefix(2000))")
            // Clock ticks are 10 ms: the start is read that coarsely.
            #expect(started >= before.rounded(.down) - 1 && started <= Date().timeIntervalSince1970 + 1, "\(started) vs \(before)")
        }
    }
}
