import Foundation
import Logging
import SpoutCore
import SpoutData
import SpoutDrivers
import SpoutEndpoints
import SpoutHTTP
import SpoutTestSupport

/// Paths of the repository, for the shipped configuration and SQL.
enum Repository {
    static let root: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
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
            router: router, databases: [database], configuration: ServerConfiguration(host: "127.0.0.1", port: 0, eventLoopThreads: 1),
            logger: logger)
        try await server.start()
        return TestService(server: server, port: server.boundPort!)
    }

    func get(_ path: String, accept: String? = nil) async throws -> HTTPTestResponse {
        try await HTTPTestClient.get(port: self.port, path, accept: accept)
    }

    func stop() async {
        await self.server.shutdown()
    }
}

/// Runs blocking work on a thread of its own.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// The 10,000-employee sample of test_db (`/work/shared/data/employees-10k`, xz-compressed),
/// decompressed once per process into a temporary directory.
enum SampleData {
    static let sourceDirectory = "/work/shared/data/employees-10k"

    static var isAvailable: Bool { FileManager.default.fileExists(atPath: self.sourceDirectory) }

    static let decompressed: Result<String, any Error> = Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-employees-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: sourceDirectory) {
            let source = (sourceDirectory as NSString).appendingPathComponent(name)
            if name.hasSuffix(".xz") {
                let target = directory.appendingPathComponent(String(name.dropLast(3)))
                _ = FileManager.default.createFile(atPath: target.path, contents: nil)
                let output = try FileHandle(forWritingTo: target)
                defer { try? output.close() }
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                process.arguments = ["xz", "-dc", source]
                process.standardOutput = output
                try process.run()
                process.waitUntilExit()
                guard process.terminationStatus == 0 else {
                    throw HTTPTestClient.Failure(description: "xz -dc \(source) failed")
                }
            } else {
                try FileManager.default.copyItem(atPath: source, toPath: directory.appendingPathComponent(name).path)
            }
        }
        return directory.path
    }

    /// Loads the sample and the pets into the database at `url`.
    static func load(into database: TemporaryDatabase) throws {
        let directory = try self.decompressed.get()
        let driver = try Drivers.driver(for: database.url)
        let connection = try driver.connect(readOnly: false, statistics: QueryStatistics())
        defer { connection.close() }
        _ = try EmployeesLoader(sqlDirectory: Repository.sqlDirectory).load(directory: directory, into: connection)
        try PetsLoader(sqlDirectory: Repository.sqlDirectory).load(into: connection)
    }

    /// Creates the pet table with the manual's 9 pets.
    static func loadPets(into database: TemporaryDatabase) throws {
        let connection = try Drivers.driver(for: database.url).connect(readOnly: false, statistics: QueryStatistics())
        defer { connection.close() }
        try PetsLoader(sqlDirectory: Repository.sqlDirectory).load(into: connection)
    }
}
