import Foundation
import SpoutCore

/// Fills a new embedded database with the sample data, so that Spout works out of the box
/// without a server: generated employees (see ``EmployeesGenerator``) and the menagerie pets.
public enum SQLiteSeeder {
    public static let defaultEmployeeCount = 20_000

    /// The scripts a seed of `dialect` reads, relative to the SQL directory: the tables of the
    /// employees and the pets, and the pets' rows.
    public static func scripts(dialect: SQLDialect) -> [String] {
        ["employees", "employees-indexes", "pets", "pet-events"].map { "schema/\(dialect.rawValue)/\($0).sql" }
            + ["seed/pets.sql", "seed/pet-events.sql"]
    }

    /// Whether `sqlDirectory` holds every script of ``scripts(dialect:)``: the shipped `sql/`
    /// (or a copy of it) does; a service's own SQL directory does not, and is never seeded.
    public static func hasScripts(sqlDirectory: String, dialect: SQLDialect = .sqlite) -> Bool {
        self.scripts(dialect: dialect).allSatisfy {
            FileManager.default.fileExists(atPath: (sqlDirectory as NSString).appendingPathComponent($0))
        }
    }

    /// What ``seedIfMissing(connection:sqlDirectory:employees:seed:progress:)`` did.
    public struct Report: Sendable, Hashable {
        /// Whether the employees tables were created and loaded (false: they existed).
        public var loadedEmployees: Bool
        /// Whether the pet table was created and loaded (false: it existed).
        public var loadedPets: Bool
        /// The employees load, when it happened.
        public var employees: LoadSummary?
        /// Rows in `pet` after the seed, when it was loaded.
        public var pets: Int?
        /// Wall time of the whole seed: generation, load and commit.
        public var seconds: Double

        /// Whether anything was loaded.
        public var seeded: Bool { self.loadedEmployees || self.loadedPets }
    }

    /// Loads the sample data sets that are missing from the database: the employees tables
    /// when none of them exists (`employees` generated employees, written to a temporary
    /// directory that is removed afterwards) and `pet` when it does not exist. Both loads run
    /// in one transaction: after an error nothing is changed. When everything exists, nothing
    /// is done (`seeded` is false).
    ///
    /// Meant for the embedded SQLite default, but works on any connection.
    ///
    /// - Throws: ``DataLoadError/Code/tablesExist`` when only some of the employees tables
    ///   exist; any error of the generator or the loaders.
    @discardableResult
    public static func seedIfMissing(
        connection: any DatabaseConnection, sqlDirectory: String, employees: Int = defaultEmployeeCount,
        seed: UInt64 = 1, progress: (any LoadProgressReporter)? = nil
    ) throws -> Report {
        let clock = ContinuousClock()
        let start = clock.now
        let existingEmployees = try withDatabaseContext("reading the database catalog failed") {
            try DatabaseCatalog.existingTables(EmployeesSchema.tableNames, on: connection)
        }
        let existingPets = try withDatabaseContext("reading the database catalog failed") {
            try DatabaseCatalog.existingTables(PetsLoader.tableNames, on: connection)
        }
        let needsEmployees = existingEmployees.isEmpty
        if !needsEmployees && existingEmployees.count < EmployeesSchema.tableNames.count {
            throw DataLoadError(
                .tablesExist,
                "the database has only some of the employees tables (\(existingEmployees.joined(separator: ", "))); "
                    + "drop them or load the employees data with spout load --replace")
        }
        // Pets are loaded when `pet` is missing; what is left of their set (the version
        // counter) is replaced with them.
        let needsPets = !existingPets.contains(PetsLoader.tableName)
        // Pets seeded before their `event` table existed get it, and the events of the pets
        // still there, without their pets being touched.
        if !needsPets && !existingPets.contains("event") {
            try Transaction.run(on: connection) { try PetsLoader(sqlDirectory: sqlDirectory).addEvents(into: connection) }
        }
        guard needsEmployees || needsPets else {
            return Report(loadedEmployees: false, loadedPets: false, employees: nil, pets: nil, seconds: secondsSince(start, clock: clock))
        }

        var directory: String?
        defer {
            if let directory { try? FileManager.default.removeItem(atPath: directory) }
        }
        if needsEmployees {
            let temporary = (NSTemporaryDirectory() as NSString).appendingPathComponent("spout-seed-\(UUID().uuidString)")
            directory = temporary
            try EmployeesGenerator.generate(directory: temporary, employees: employees, seed: seed)
        }
        var report = try Transaction.run(on: connection) { () throws -> Report in
            var report = Report(loadedEmployees: false, loadedPets: false, employees: nil, pets: nil, seconds: 0)
            if let directory {
                report.employees = try EmployeesLoader(sqlDirectory: sqlDirectory)
                    .load(directory: directory, into: connection, replace: false, progress: progress)
                report.loadedEmployees = true
            }
            if needsPets {
                report.pets = try PetsLoader(sqlDirectory: sqlDirectory).load(into: connection, replace: !existingPets.isEmpty)
                report.loadedPets = true
            }
            return report
        }
        report.seconds = secondsSince(start, clock: clock)
        return report
    }
}
