import SpoutCore
import SpoutDrivers
import SpoutEndpoints
import SpoutHTTP
import SpoutTestSupport
import Testing

/// A database that cannot be reached, on either driver: `/ready` says so and its rows are a 503
/// that names no credential. No test server is needed: the point is that there is none.
@Suite struct UnreachableDatabaseTests {
    /// A URL of `dialect` that no connection can open: a closed port, a folder that is not there.
    static func unreachableURL(_ dialect: SQLDialect) -> String {
        switch dialect {
        case .postgres: "postgresql://spout@127.0.0.1:1/postgres?connect_timeout=2"
        case .sqlite: "sqlite:/nonexistent-\(UInt32.random(in: 0...UInt32.max))/x.sqlite"
        }
    }

    @Test(arguments: SQLDialect.allCases)
    func anUnreachableDatabaseIsNotReadyAndItsRowsAre503(_ dialect: SQLDialect) async throws {
        let unreachable = Database(driver: try Drivers.driver(for: Self.unreachableURL(dialect)))
        var router = Router()
        router.add(.get, "/rows") { _ in .rows(try unreachable.query("SELECT 1"), database: unreachable) }
        router.addReadiness(of: [unreachable])
        let server = HTTPServer(router: router, configuration: ServerConfiguration(host: "127.0.0.1", port: 0))
        try await server.start()
        let port = try #require(server.boundPort)
        let ready = try await HTTPTestConnection.get(port: port, "/ready")
        let rows = try await HTTPTestConnection.get(port: port, "/rows")
        await server.shutdown()
        #expect(ready.status == 503)
        #expect(rows.status == 503)
        #expect(rows.text == #"{"error":"connection failed"}"#)
        #expect(!rows.text.contains("spout@") && !rows.text.contains("nonexistent"))
    }
}
