import Foundation
import SpoutEndpoints
import SpoutTestSupport

/// Paths of the repository, for the shipped configuration and SQL.
enum Repository {
    static var root: URL { TestFixtures.repositoryRoot }
    static var configFile: String { self.root.appendingPathComponent("config/spout.yaml").path }
    static var sqlDirectory: String { self.root.appendingPathComponent("sql").path }

    /// The shipped endpoints (config/endpoints/*.yaml with sql/).
    static func shippedEndpoints() throws -> EndpointSet {
        let configuration = try SpoutConfiguration.load(file: self.configFile, environment: [:])
        return try EndpointSet.load(configuration: configuration, environment: [:])
    }
}
