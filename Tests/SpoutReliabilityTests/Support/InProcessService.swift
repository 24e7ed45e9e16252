import Foundation
import Logging
import SpoutCore
import SpoutDrivers
import SpoutEndpoints
import SpoutHTTP
import SpoutTestSupport

/// The service of a ``ServiceDirectory`` run in the test process: the same wiring as
/// `spout serve` (configuration → endpoints → database → router → server) on a free port.
final class InProcessService: Sendable {
    let server: HTTPServer
    let database: Database
    let port: Int

    private init(server: HTTPServer, database: Database, port: Int) {
        self.server = server
        self.database = database
        self.port = port
    }

    static func start(_ directory: ServiceDirectory, logger: Logger = quietLogger) async throws -> InProcessService {
        let configuration = try directory.configuration()
        let endpoints = try EndpointSet.load(configuration: configuration, environment: ["SPOUT_JWT_SECRET": TestTokens.secret])
        let database = try Drivers.open(configuration.database.url, configuration: configuration.databaseConfiguration)
        var serverConfiguration = configuration.serverConfiguration
        serverConfiguration.eventLoopThreads = 1
        let server = HTTPServer(
            router: endpoints.makeRouter(database: database, logger: logger),
            configuration: serverConfiguration, logger: logger)
        try await server.start()
        guard let port = server.boundPort else { throw RawSocket.Failure(description: "the server has no bound port") }
        return InProcessService(server: server, database: database, port: port)
    }

    func get(_ target: String, headers: [(String, String)] = [], timeout: TimeInterval = 30) async throws -> HTTPTestResponse {
        try await RawHTTP.get(port: self.port, target, headers: headers, timeout: timeout)
    }

    /// Shuts the server down and closes the database.
    func stop() async {
        await self.server.shutdown(drainTimeout: .seconds(5))
        self.database.close()
    }
}

/// A logger that drops everything (the access log of thousands of requests is noise here).
let quietLogger = Logger(label: "spout.reliability", factory: { _ in SwiftLogNoOpLogHandler() })
