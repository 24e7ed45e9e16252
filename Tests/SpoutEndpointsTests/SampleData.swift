import Foundation
import SpoutCore
import SpoutData
import SpoutDrivers
import SpoutEndpoints
import SpoutTestDatabases
import SpoutTestSupport
import Testing

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
