import Foundation
import SpoutCore
import SpoutDrivers
import SpoutEndpoints
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Live notices while PostgreSQL restarts under a running service.
@Suite("Live notices across a PostgreSQL restart")
struct LiveNoticesRestartTests {
    @Test(
        "a subscriber keeps its stream while PostgreSQL restarts, and hears the first write after it",
        .enabled(if: ThrowawayPostgres.isAvailable, "PostgreSQL server binaries (initdb) are not installed"))
    func restart() async throws {
        let cluster = try await onThread { try ThrowawayPostgres.create() }
        defer { cluster.remove() }
        let url = cluster.adminURL + "?connect_timeout=3"
        try await onThread { try SampleData.seed(url, employees: 20) }
        let directory = try ServiceDirectory(databaseURL: url, poolSize: 4, acquireTimeoutMs: 1_000)
        defer { directory.remove() }
        let configuration = try directory.configuration()
        let endpoints = try EndpointSet.load(configuration: configuration, environment: [:])
        let database = try Drivers.open(url, configuration: configuration.databaseConfiguration)
        defer { database.close() }
        try await endpoints.prepareSync(on: database)
        try await InProcessServer.serving(endpoints, database: database, logger: quietLogger) { service in
            let stream = try await EventStreamReader.open(port: service.port, "/pets?owner=Diane")
            defer { stream.close() }
            #expect(stream.status == 200)

            // Down and up again: the poller's reads fail meanwhile and are retried from its
            // position; the stream stays open, and the first write after is told.
            try await onThread { try cluster.stop() }
            try await onThread {
                try cluster.start()
                let connection = try Drivers.driver(for: url).connect(readOnly: false, statistics: QueryStatistics())
                defer { connection.close() }
                try connection.executeScript("UPDATE pet SET species = 'wolf' WHERE name = 'Bowser'")
            }
            let event = try #require(try await stream.next(), "the stream ended")
            #expect(event.name == "change")
            #expect(event.id != nil)
        }
    }
}
