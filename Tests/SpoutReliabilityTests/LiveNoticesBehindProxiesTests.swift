import Foundation
import SpoutCore
import SpoutDrivers
import SpoutEndpoints
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Live notices through the reverse proxies users put in front of Spout, from Debian's
/// packages: nginx configured as a site that knows nothing of Spout writes it (`proxy_pass`
/// alone, so nginx buffers responses and speaks HTTP/1.0 to Spout), and nginx and haproxy as
/// ``ThrowawayProxy`` configures them (one upstream connection, reused). Without
/// `X-Accel-Buffering: no` on the event stream, nginx with its defaults held the events (and
/// the stream's first bytes) in its buffers: the app was never told its screen was stale. The
/// configured proxies pass the stream with or without the header.
@Suite("Live notices behind proxies")
struct LiveNoticesBehindProxiesTests {
    @Test(
        "through nginx with its default proxying (buffered, HTTP/1.0 upstream), a subscriber hears a write at once",
        .enabled(if: RoundRobinNginx.isAvailable), arguments: SQLDialect.allCases)
    func nginxDefaults(_ dialect: SQLDialect) async throws {
        try await Self.subscribeThroughProxy(dialect) { port in
            let nginx = try await RoundRobinNginx.start(upstreams: [port], proxying: .nginxDefaults)
            return (nginx.port, { nginx.stop() })
        }
    }

    @Test(
        "through nginx and haproxy as an operator configures them, a subscriber hears a write at once",
        arguments: SQLDialect.allCases, ThrowawayProxy.Kind.allCases)
    func configuredProxies(_ dialect: SQLDialect, _ kind: ThrowawayProxy.Kind) async throws {
        guard ThrowawayProxy.isAvailable(kind) else { return }
        try await Self.subscribeThroughProxy(dialect) { port in
            let proxy = try await ThrowawayProxy.start(kind, upstreamPort: port)
            return (proxy.port, { proxy.stop() })
        }
    }

    /// Serves the pets on `dialect`, starts a proxy in front of the server's port with
    /// `startProxy` (its port, and how to stop it), subscribes to Diane's pets through it, and
    /// expects a `change` event after a write to one of them.
    private static func subscribeThroughProxy(
        _ dialect: SQLDialect, startProxy: (Int) async throws -> (port: Int, stop: () -> Void)
    ) async throws {
        guard let store = try TestDatabases.make(dialect, prefix: "spout_rel_sse_proxy") else { return }
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
            let proxy = try await startProxy(service.port)
            defer { proxy.stop() }
            let port = proxy.port
            // A read that waits longer than this for the head or an event fails the test.
            let stream = try await onThread { try EventStreamReader(port: port, "/pets?owner=Diane", timeout: 10) }
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
