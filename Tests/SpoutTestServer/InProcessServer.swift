import Foundation
import Logging
import SpoutCore
import SpoutDrivers
import SpoutEndpoints
import SpoutHTTP
import SpoutTestSupport

/// Spout's HTTP server in the test process, on a free port of 127.0.0.1: the one in-process
/// server fixture. It serves a router made by the test, an endpoint set on a database, or a
/// whole configuration wired as `spout serve` wires it. (A server in a child process, as a user
/// runs it, is a ``ServerProcess``.)
///
/// Contract: call ``stop(drainTimeout:)`` (or use ``serving(_:database:configuration:logger:_:)``)
/// before the value goes away; it shuts the server down and closes the database when this
/// fixture opened it.
public final class InProcessServer: Sendable {
    public let server: HTTPServer
    /// The port the server listens on.
    public let port: Int
    /// The database served.
    public let database: Database
    /// Whether ``stop(drainTimeout:)`` closes ``database``: the fixture opened it from a
    /// configuration (otherwise it is the test's).
    private let ownsDatabase: Bool

    private init(server: HTTPServer, port: Int, database: Database, ownsDatabase: Bool) {
        self.server = server
        self.port = port
        self.database = database
        self.ownsDatabase = ownsDatabase
    }

    /// A server configuration for tests: 127.0.0.1, a free port, one event loop.
    public static var testConfiguration: ServerConfiguration {
        ServerConfiguration(host: "127.0.0.1", port: 0, eventLoopThreads: 1)
    }

    /// Starts a server for `router`, whose routes serve `database` (which stays the caller's).
    public static func start(
        router: Router, database: Database, configuration: ServerConfiguration = testConfiguration,
        logger: Logger = Logger(label: "spout.test")
    ) async throws -> InProcessServer {
        try await self.start(router: router, configuration: configuration, logger: logger, database: database, ownsDatabase: false)
    }

    /// Starts a server for `endpoints` on `database` (which stays the caller's).
    public static func start(
        _ endpoints: EndpointSet, database: Database, configuration: ServerConfiguration = testConfiguration,
        logger: Logger = Logger(label: "spout.test")
    ) async throws -> InProcessServer {
        try await self.start(
            router: endpoints.makeRouter(database: database, logger: logger), database: database, configuration: configuration,
            logger: logger)
    }

    /// Starts what `spout serve` would for `configuration`: its endpoints (with `environment`
    /// for the variables they read, such as a token secret), its database (opened here, closed
    /// by ``stop(drainTimeout:)``) and its server settings, on a free port and one event loop.
    public static func start(
        configuration: SpoutConfiguration, environment: [String: String] = [:], logger: Logger = Logger(label: "spout.test")
    ) async throws -> InProcessServer {
        let endpoints = try EndpointSet.load(configuration: configuration, environment: environment)
        let database = try Drivers.open(configuration.database.url, configuration: configuration.databaseConfiguration)
        var serverConfiguration = configuration.serverConfiguration
        serverConfiguration.port = 0
        serverConfiguration.eventLoopThreads = 1
        do {
            return try await self.start(
                router: endpoints.makeRouter(database: database, logger: logger), configuration: serverConfiguration, logger: logger,
                database: database, ownsDatabase: true)
        } catch {
            database.close()
            throw error
        }
    }

    private static func start(
        router: Router, configuration: ServerConfiguration, logger: Logger, database: Database, ownsDatabase: Bool
    ) async throws -> InProcessServer {
        let server = HTTPServer(router: router, configuration: configuration, logger: logger)
        try await server.start()
        guard let port = server.boundPort else {
            await server.shutdown()
            throw RawSocket.Failure(description: "the server has no bound port")
        }
        return InProcessServer(server: server, port: port, database: database, ownsDatabase: ownsDatabase)
    }

    /// Starts a server for `endpoints` on `database`, runs `body` with it and stops it, also
    /// when `body` throws.
    public static func serving(
        _ endpoints: EndpointSet, database: Database, configuration: ServerConfiguration = testConfiguration,
        logger: Logger = Logger(label: "spout.test"), _ body: (InProcessServer) async throws -> Void
    ) async throws {
        let server = try await self.start(endpoints, database: database, configuration: configuration, logger: logger)
        do {
            try await body(server)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// One request on a new connection (``RawHTTP/get(port:_:method:headers:body:timeout:)``);
    /// `accept` adds an `Accept` field.
    public func get(
        _ target: String, headers: [(String, String)] = [], accept: String? = nil, timeout: TimeInterval = 30
    ) async throws -> HTTPTestResponse {
        try await RawHTTP.get(port: self.port, target, headers: headers + (accept.map { [("Accept", $0)] } ?? []), timeout: timeout)
    }

    /// Shuts the server down (in-flight responses get `drainTimeout`) and closes the database
    /// when the fixture opened it.
    public func stop(drainTimeout: Duration = .seconds(5)) async {
        await self.server.shutdown(drainTimeout: drainTimeout)
        if self.ownsDatabase { self.database.close() }
    }
}
