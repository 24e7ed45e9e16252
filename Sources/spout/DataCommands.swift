import ArgumentParser
import Foundation
import SpoutCore
import SpoutData
import SpoutDrivers

/// `spout load`: the MySQL employees sample database (test_db) into PostgreSQL or SQLite.
struct Load: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load test_db's employees.sql and load_*.dump files into a database.",
        discussion: """
            All or nothing: the schema (from sql/schema/<dialect>/), the rows, the indexes and \
            ANALYZE run in one transaction; a malformed file stops the load with \
            file:line:column and leaves the database as it was.
            """
    )

    @Argument(help: "The directory holding employees.sql and the load_*.dump files.")
    var directory: String

    @OptionGroup var target: LoadTarget

    func run() async throws {
        let loader = EmployeesLoader(sqlDirectory: self.target.sqlDirectory)
        let (directory, replace) = (self.directory, self.target.replace)
        let summary = try await self.target.withConnection { connection in
            try loader.load(directory: directory, into: connection, replace: replace, progress: LoadProgressReporters.standardOutput())
        }
        print("loaded \(summary.totalRows) rows in \(String(format: "%.1f", summary.seconds)) s")
        for table in summary.tables {
            print("  \(table.name.padding(toLength: 14, withPad: " ", startingAt: 0)) \(table.rows) rows")
        }
    }
}

/// `spout load-pets`: the MySQL tutorial's `pet` table.
struct LoadPets: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load-pets",
        abstract: "Create the pet table and load the menagerie rows (Spout's own copy, or a TSV file)."
    )

    @Argument(help: "A pet.tsv file (tab-separated, header line, \\N for NULL); default: sql/seed/pets.sql.")
    var file: String?

    @OptionGroup var target: LoadTarget

    func run() async throws {
        let loader = PetsLoader(sqlDirectory: self.target.sqlDirectory)
        let (file, replace) = (self.file, self.target.replace)
        let rows = try await self.target.withConnection { connection in
            if let file {
                return try loader.load(tsv: file, into: connection, replace: replace)
            }
            return try loader.load(into: connection, replace: replace)
        }
        print("loaded \(rows) pets")
    }
}

/// The options `load` and `load-pets` share: where to load, and whether to replace.
struct LoadTarget: ParsableArguments {
    @Option(help: "Database URL (postgresql://… or sqlite:PATH; default $SPOUT_DATABASE_URL or the embedded SQLite file).")
    var database: String = ProcessInfo.processInfo.environment["SPOUT_DATABASE_URL"] ?? "sqlite:data/spout.sqlite"

    @Flag(help: "Drop and recreate the tables when they exist.")
    var replace = false

    @Option(help: "Spout's sql/ directory (schema scripts).")
    var sqlDirectory: String = "sql"

    /// Runs `body` on a read-write connection to ``database``, on the database's thread.
    func withConnection<T: Sendable>(_ body: @escaping @Sendable (any DatabaseConnection) throws -> T) async throws -> T {
        let database = try Drivers.open(self.database, configuration: DatabaseConfiguration(maximumConnections: 1))
        defer { database.close() }
        return try await database.run(readOnly: false, body)
    }
}

/// `spout generate`: test_db-format dumps of any size.
struct Generate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write test_db-format dump files with generated employees (deterministic for a seed)."
    )

    @Argument(help: "The directory to write employees.sql and the load_*.dump files to.")
    var directory: String

    @Option(help: "Number of employees (numbered from 10001).")
    var employees: Int = EmployeesGenerator.defaultEmployeeCount

    @Option(help: "Random seed.")
    var seed: UInt64 = 1

    func run() throws {
        let start = ContinuousClock.now
        let summary = try EmployeesGenerator.generate(directory: self.directory, employees: self.employees, seed: self.seed)
        let seconds = Double((ContinuousClock.now - start).components.attoseconds) / 1e18
            + Double((ContinuousClock.now - start).components.seconds)
        print("generated \(summary.rowCounts.values.reduce(0, +)) rows in \(self.directory) in \(String(format: "%.1f", seconds)) s")
        for (table, rows) in summary.rowCounts.sorted(by: { $0.key < $1.key }) {
            print("  \(table.padding(toLength: 14, withPad: " ", startingAt: 0)) \(rows) rows")
        }
    }
}
