import Foundation
import Logging
import SpoutCore
import SpoutData
import SpoutDrivers
import SpoutEndpoints
import SpoutHTTP
import SpoutTestDatabases
import SpoutTestSupport
import Testing

/// Paths of the repository, for the shipped configuration and SQL.
enum Repository {
    static var root: URL { TestFixtures.repositoryRoot }
    static var configFile: String { self.root.appendingPathComponent("config/spout.yaml").path }
    static var sqlDirectory: String { self.root.appendingPathComponent("sql").path }

    /// The shipped endpoints (config/endpoints/*.yaml with sql/).
    static func shippedEndpoints() throws -> EndpointSet {
        let configuration = try SpoutConfiguration.load(file: self.configFile, environment: [:])
        return try EndpointSet.load(configuration: configuration)
    }
}

/// An HTTP server on a free port serving an endpoint set on one database.
final class TestService: Sendable {
    let server: HTTPServer
    let port: Int

    private init(server: HTTPServer, port: Int) {
        self.server = server
        self.port = port
    }

    static func start(_ endpoints: EndpointSet, database: Database) async throws -> TestService {
        let logger = Logger(label: "spout.test")
        let router = endpoints.makeRouter(database: database, logger: logger)
        let server = HTTPServer(
            router: router, configuration: ServerConfiguration(host: "127.0.0.1", port: 0, eventLoopThreads: 1),
            logger: logger)
        try await server.start()
        return TestService(server: server, port: server.boundPort!)
    }

    /// Starts a service, runs `body` with it and stops it, also when `body` throws.
    static func serving(
        _ endpoints: EndpointSet, database: Database, _ body: (TestService) async throws -> Void
    ) async throws {
        let service = try await Self.start(endpoints, database: database)
        do {
            try await body(service)
        } catch {
            await service.stop()
            throw error
        }
        await service.stop()
    }

    func get(_ path: String, accept: String? = nil) async throws -> HTTPTestResponse {
        try await RawHTTP.get(port: self.port, path, headers: accept.map { [("Accept", $0)] } ?? [])
    }

    func stop() async {
        await self.server.shutdown()
    }
}


/// The employees data the endpoint tests serve, always from inside the repository or generated
/// at run time: the hand-written test_db fixture (`Tests/Fixtures/test_db`, 14 employees with
/// the format's corners), or a generated data set for volume.
enum SampleData: Sendable, CustomTestStringConvertible {
    case fixture
    case generated(employees: Int, seed: UInt64)

    var testDescription: String {
        switch self {
        case .fixture: "the test_db fixture"
        case .generated(let employees, let seed): "\(employees) generated employees (seed \(seed))"
        }
    }

    /// Loads this data set and the pets into the database at `database.url`; returns the rows
    /// loaded per table.
    @discardableResult
    func load(into database: TemporaryDatabase) throws -> [String: Int] {
        let connection = try Drivers.driver(for: database.url).connect(readOnly: false, statistics: QueryStatistics())
        defer { connection.close() }
        let loader = EmployeesLoader(sqlDirectory: Repository.sqlDirectory)
        let summary: LoadSummary
        switch self {
        case .fixture:
            summary = try loader.load(directory: TestFixtures.testDB, into: connection)
        case .generated(let employees, let seed):
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-generated-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            _ = try EmployeesGenerator.generate(directory: directory.path, employees: employees, seed: seed)
            summary = try loader.load(directory: directory.path, into: connection)
        }
        try PetsLoader(sqlDirectory: Repository.sqlDirectory).load(into: connection)
        var rows: [String: Int] = [:]
        for table in EmployeesLoader.tableNames {
            rows[table] = summary.rows(in: table)
        }
        return rows
    }

    /// Creates the pet table with the manual's 9 pets.
    static func loadPets(into database: TemporaryDatabase) throws {
        let connection = try Drivers.driver(for: database.url).connect(readOnly: false, statistics: QueryStatistics())
        defer { connection.close() }
        try PetsLoader(sqlDirectory: Repository.sqlDirectory).load(into: connection)
    }
}
