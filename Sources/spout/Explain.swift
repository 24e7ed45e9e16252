import ArgumentParser
import Foundation
import HTTPTypes
import SpoutCore
import SpoutDrivers
import SpoutEndpoints
import SpoutHTTP

/// `spout explain`: the database's plan of the statement Spout would send for one request.
struct Explain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the database's plan of the statement Spout sends for a request, without running it.",
        discussion: """
            The request is routed and its arguments converted as `spout serve` would; the plan is \
            PostgreSQL's EXPLAIN (of the cursor a stream declares, or of the page's statement \
            with its values) or SQLite's EXPLAIN QUERY PLAN. Details are not explained.
            Example: spout explain GET '/employees?lastName=Haddad&pageSize=50'
            """
    )

    @Option(help: "The configuration file (default: config/spout.yaml, or $SPOUT_CONFIG).")
    var config: String?

    @Option(help: "The database URL: postgresql://… or sqlite:PATH (overrides database.url).")
    var database: String?

    @Argument(help: "The method: GET (or HEAD).")
    var method: String

    @Argument(help: "The path and query string, as a client sends them: /employees?lastName=Haddad")
    var target: String

    func run() async throws {
        guard let method = HTTPRequest.Method(self.method.uppercased()) else {
            // Not even a method's name (`G T`): no more a read than `POST` is.
            throw ExplainError(description: "\(self.method.uppercased()) is not a read; only GET requests can be explained")
        }
        let environment = ProcessInfo.processInfo.environment
        let settings = try SpoutConfiguration.load(file: self.config, environment: environment, overrides: .init(databaseURL: self.database))
        let endpoints = try EndpointSet.load(configuration: settings, environment: environment)
        var configuration = settings.databaseConfiguration
        configuration.maximumConnections = 1
        let database = try Drivers.open(settings.database.url, configuration: configuration)
        defer { database.close() }
        let plan: [String]
        do {
            plan = try await endpoints.explain(method, self.target, database: database)
        } catch let error as ArgumentError {
            // What the server would answer with a 400, naming the parameter.
            throw ExplainError(description: "\(error) for parameter \(error.parameter)" + (error.value.map { ": \($0)" } ?? ""))
        }
        for line in plan {
            print(line)
        }
    }
}
