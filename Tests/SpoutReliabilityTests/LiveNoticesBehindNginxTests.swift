import Foundation
import SpoutCore
import SpoutDrivers
import SpoutEndpoints
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Live notices through Debian's nginx configured as a site that knows nothing of Spout
/// writes it: `proxy_pass` alone, so nginx buffers responses and speaks HTTP/1.0 to Spout.
/// Without `X-Accel-Buffering: no` on the event stream, nginx held the events (and the
/// stream's first bytes) in its buffers: the app was never told its screen was stale.
@Suite("Live notices behind nginx")
struct LiveNoticesBehindNginxTests {
    @Test(
        "through nginx with its default proxying (buffered, HTTP/1.0 upstream), a subscriber hears a write at once",
        .enabled(if: RoundRobinNginx.isAvailable), arguments: SQLDialect.allCases)
    func nginxDefaults(_ dialect: SQLDialect) async throws {
        guard let store = try TestDatabases.make(dialect, prefix: "spout_rel_sse_nginx") else { return }
        defer { store.drop() }
        try await onThread { try SampleData.seed(store.url, employees: 20) }
        let directory = try ServiceDirectory(databaseURL: store.url, poolSize: 4)
        defer { directory.remove() }
        let configuration = try directory.configuration()
        let endpoints = try EndpointSet.load(configuration: configuration, environment: [:])
        let database = try Drivers.open(store.url, configuration: configuration.databaseConfiguration)
        defer { database.close() }
        try await endpoints.prepareSync(on: database)
        try await InProcessServer.serving(endpoints, database: database, logger: quietLogger) { service in
            let nginx = try await RoundRobinNginx.start(upstreams: [service.port], proxying: .nginxDefaults)
            defer { nginx.stop() }
            // A read that waits longer than this for the head or an event fails the test.
            let stream = try await onThread { try EventStreamReader(port: nginx.port, "/pets?owner=Diane", timeout: 10) }
            defer { stream.close() }
            #expect(stream.status == 200)
            #expect(stream.header("Content-Type") == "text/event-stream")
            try await onThread {
                let connection = try Drivers.driver(for: store.url).connect(readOnly: false, statistics: QueryStatistics())
                defer { connection.close() }
                try connection.executeScript("UPDATE pet SET species = 'wolf' WHERE name = 'Bowser'")
            }
            let event = try #require(try await stream.next(), "the stream ended")
            #expect(event.name == "change" && event.id != nil)
        }
    }
}
