import ArgumentParser
import Foundation
import SpoutCore
import SpoutDrivers
import SpoutEndpoints

/// `spout check`: what `spout serve` checks at start, for CI and deploy pipelines, without
/// serving: the configuration and the endpoint files, then every statement prepared against
/// the database (``SpoutEndpoints/EndpointSet/statementProblems(on:)``), nothing run.
struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the configuration and prepare every endpoint's SQL against the database, without running it.",
        discussion: """
            Loads the configuration and the endpoint files as `spout serve` does, then prepares \
            every statement (each endpoint's SQL, its pages', its versionSql and its details' at \
            every depth) against the database, without running any. Prints each problem as \
            file:line: message. Exit status: 0 when there is none; 78 for a configuration error \
            or a statement the database does not prepare; 69 when the database cannot be reached \
            (nothing was checked against it).
            """
    )

    /// `EX_UNAVAILABLE` of sysexits.h: the database could not be reached, so its part of the
    /// check did not happen.
    static let unreachableStatus: Int32 = 69

    @Option(help: "The configuration file (default: config/spout.yaml, or $SPOUT_CONFIG).")
    var config: String?

    @Option(help: "The database URL: postgresql://… or sqlite:PATH (overrides database.url).")
    var database: String?

    func run() async throws {
        // A ConfigurationError is printed alone with status 78 by Spout.main.
        let environment = ProcessInfo.processInfo.environment
        let settings = try SpoutConfiguration.load(file: self.config, environment: environment, overrides: .init(databaseURL: self.database))
        let endpoints = try EndpointSet.load(configuration: settings, environment: environment)
        var configuration = settings.databaseConfiguration
        configuration.maximumConnections = 1
        var standardError = StandardError()
        let problems: [StatementProblem]
        do {
            let database = try Drivers.open(settings.database.url, configuration: configuration)
            defer { database.close() }
            problems = try await endpoints.statementProblems(on: database)
        } catch {
            // The driver's message is for the operator here (String(reflecting:)), as at start.
            print(
                "spout check: the database \(Serve.redacted(settings.database.url)) cannot be reached, so the SQL was not checked: "
                    + String(reflecting: error), to: &standardError)
            throw ExitCode(Self.unreachableStatus)
        }
        for problem in problems {
            print(problem)
        }
        guard problems.isEmpty else { throw ExitCode(Spout.configurationErrorStatus) }
        let count = endpoints.endpoints.count
        print("\(count) endpoint\(count == 1 ? "" : "s"): every statement prepares")
    }
}
