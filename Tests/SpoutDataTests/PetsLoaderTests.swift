import Foundation
import SpoutCore
import SpoutTestSupport
import Testing

@testable import SpoutData

@Suite("PetsLoader")
struct PetsLoaderTests {
    private let loader = PetsLoader(sqlDirectory: DataTestFixtures.sqlDirectory)

    private static let expectedPets: [[SQLValue]] = [
        ["Bowser", "Diane", "dog", "m", date("1979-08-31"), date("1995-07-29")],
        ["Buffy", "Harold", "dog", "f", date("1989-05-13"), .null],
        ["Chirpy", "Gwen", "bird", "f", date("1998-09-11"), .null],
        ["Claws", "Gwen", "cat", "m", date("1994-03-17"), .null],
        ["Fang", "Benny", "dog", "m", date("1990-08-27"), .null],
        ["Fluffy", "Harold", "cat", "f", date("1993-02-04"), .null],
        ["Puffball", "Diane", "hamster", "f", date("1999-03-30"), .null],
        ["Slim", "Benny", "snake", "m", date("1996-04-29"), .null],
        ["Whistler", "Gwen", "bird", .null, date("1997-12-09"), .null],
    ]

    @Test(arguments: [SQLDialect.postgres, .sqlite])
    func seedAndTSVGiveTheSameRows(_ dialect: SQLDialect) throws {
        try withTestDatabase(dialect) { connection throws in
            #expect(try self.loader.load(into: connection) == 9)
            #expect(try fetchRows(connection, "SELECT * FROM pet ORDER BY name") == Self.expectedPets)
            #expect {
                try self.loader.load(tsv: DataTestFixtures.petsTSV, into: connection)
            } throws: { error in
                (error as? DataLoadError)?.code == .tablesExist
            }
            #expect(try self.loader.load(tsv: DataTestFixtures.petsTSV, into: connection, replace: true) == 9)
            #expect(try fetchRows(connection, "SELECT * FROM pet ORDER BY name") == Self.expectedPets)
        }
    }

    @Test func badTSVFilesFailWithTheirPositionAndChangeNothing() throws {
        let directory = try DataTestFixtures.makeTemporaryDirectory()
        defer { directory.remove() }
        let path = (directory.path as NSString).appendingPathComponent("pet.tsv")
        let cases: [(String, DataFileError.Reason, SourcePosition)] = [
            ("name\towner\tspecies\tsex\tbirth\tdeath\nRex\tAnn\tdog\tm\t1999-02-30\t\\N\n", .badDate("1999-02-30"), SourcePosition(line: 2, column: 15)),
            ("Rex\tAnn\tdog\tm\t1999-02-03\n", .wrongColumnCount(expected: 6, found: 5), SourcePosition(line: 1, column: 1)),
            ("Rex\tAnn\tdog\tm\t\\N\t\\N\n\\N\tAnn\tcat\tf\t\\N\t\\N\n", .invalidValue("NULL in NOT NULL column name"), SourcePosition(line: 2, column: 1)),
        ]
        try withTestDatabase(.sqlite) { connection throws in
            try self.loader.load(into: connection)
            for (text, reason, position) in cases {
                try text.write(toFile: path, atomically: true, encoding: .utf8)
                #expect {
                    try self.loader.load(tsv: path, into: connection, replace: true)
                } throws: { error in
                    (error as? DataFileError)?.reason == reason && (error as? DataFileError)?.position == position
                }
                #expect(try fetchRows(connection, "SELECT * FROM pet ORDER BY name") == Self.expectedPets)
            }
        }
    }

    @Test func tsvEscapes() {
        #expect(PetsLoader.tsvValue(Array("\\N".utf8)) == .null)
        #expect(PetsLoader.tsvValue(Array("a\\tb\\nc\\\\d\\N".utf8)) == "a\tb\nc\\dN")
        #expect(PetsLoader.tsvValue([]) == "")
    }
}

@Suite("SQLiteSeeder")
struct SQLiteSeederTests {
    @Test func seedsOnceInOneTransaction() throws {
        try withTestDatabase(.sqlite) { connection throws in
            let report = try SQLiteSeeder.seedIfMissing(
                connection: connection, sqlDirectory: DataTestFixtures.sqlDirectory, employees: 2_000, seed: 4)
            #expect(report.seeded && report.loadedEmployees && report.loadedPets)
            #expect(report.pets == 9)
            #expect(report.employees?.rows(in: "employees") == 2_000)
            #expect(report.seconds > 0)
            #expect(try countRows(connection, "employees") == 2_000)
            #expect(try countRows(connection, "pet") == 9)
            let salaries = try countRows(connection, "salaries")

            let again = try SQLiteSeeder.seedIfMissing(connection: connection, sqlDirectory: DataTestFixtures.sqlDirectory)
            #expect(!again.seeded)
            #expect(try countRows(connection, "salaries") == salaries)

            // Only the missing data set is loaded.
            try connection.executeScript("DROP TABLE pet")
            let pets = try SQLiteSeeder.seedIfMissing(connection: connection, sqlDirectory: DataTestFixtures.sqlDirectory)
            #expect(pets.loadedPets && !pets.loadedEmployees)
            #expect(try countRows(connection, "employees") == 2_000)
        }
    }

    @Test func petsSeededBeforeTheirEventsGetThemWithoutBeingTouched() throws {
        try withTestDatabase(.sqlite) { connection throws in
            try SQLiteSeeder.seedIfMissing(connection: connection, sqlDirectory: DataTestFixtures.sqlDirectory, employees: 10)
            #expect(try countRows(connection, "event") == 10)
            // As a database seeded before the event table: no events, and a pet renamed and one
            // deleted through the API since.
            try connection.executeScript(
                "DROP TABLE event; DELETE FROM pet WHERE name = 'Buffy'; UPDATE pet SET owner = 'Zed' WHERE name = 'Fluffy'")
            let upgraded = try SQLiteSeeder.seedIfMissing(connection: connection, sqlDirectory: DataTestFixtures.sqlDirectory)
            #expect(!upgraded.loadedPets && !upgraded.loadedEmployees)
            #expect(try countRows(connection, "pet") == 8)
            // Buffy's two litters are not added: she is gone.
            #expect(try countRows(connection, "event") == 8)
            let owner = try connection.query(try ParsedSQL("SELECT owner FROM pet WHERE name = 'Fluffy'", dialect: .sqlite), [], options: QueryOptions())
            defer { owner.close() }
            #expect(try owner.next() && owner.value(at: 0) == .text("Zed"))
        }
    }

    @Test func failureLeavesTheDatabaseEmpty() throws {
        let sql = try DataTestFixtures.makeTemporaryDirectory()
        defer { sql.remove() }
        // A copy of the sql directory whose pets seed is broken: the employees load, done
        // first in the same transaction, must be rolled back too.
        try DataTestFixtures.run("/bin/cp", ["-R", DataTestFixtures.sqlDirectory + "/.", sql.path])
        try "INSERT INTO pet (name) VALUES ('a'); INSERT INTO pet (name) VALUES ('a');"
            .write(toFile: sql.path + "/seed/pets.sql", atomically: true, encoding: .utf8)
        try withTestDatabase(.sqlite) { connection throws in
            #expect(throws: DataLoadError.self) {
                try SQLiteSeeder.seedIfMissing(connection: connection, sqlDirectory: sql.path, employees: 100)
            }
            let existing = try DatabaseCatalog.existingTables(EmployeesLoader.tableNames + ["pet"], on: connection)
            #expect(existing.isEmpty)
        }
    }

    @Test func partialEmployeesSchemaIsAnError() throws {
        try withTestDatabase(.sqlite) { connection throws in
            try connection.executeScript("CREATE TABLE employees (emp_no INTEGER)")
            #expect {
                try SQLiteSeeder.seedIfMissing(connection: connection, sqlDirectory: DataTestFixtures.sqlDirectory, employees: 10)
            } throws: { error in
                (error as? DataLoadError)?.code == .tablesExist
            }
        }
    }
}

@Suite("Progress reporters")
struct ProgressReporterTests {
    @Test func plainReporterWritesALinePerFileStartAndEnd() {
        var output: [String] = []
        let reporter = PlainProgressReporter { output.append($0) }
        reporter.progress(file: "load_employees.dump", rowsDone: 0, bytesDone: 0, bytesTotal: 2_500_000)
        reporter.progress(file: "load_employees.dump", rowsDone: 5_000, bytesDone: 1_000_000, bytesTotal: 2_500_000)
        reporter.finished(file: "load_employees.dump", rows: 10_000, seconds: 0.5)
        #expect(output == [
            "loading load_employees.dump (2.5 MB)\n",
            "load_employees.dump: 10,000 rows in 0.50 s (20,000 rows/s)\n",
        ])
    }

    @Test func terminalReporterRedrawsOneLine() {
        var output: [String] = []
        let reporter = TerminalProgressReporter(barWidth: 10) { output.append($0) }
        reporter.progress(file: "a.dump", rowsDone: 0, bytesDone: 0, bytesTotal: 100)
        reporter.progress(file: "a.dump", rowsDone: 10, bytesDone: 50, bytesTotal: 100)
        reporter.progress(file: "a.dump", rowsDone: 20, bytesDone: 100, bytesTotal: 100)
        reporter.finished(file: "a.dump", rows: 20, seconds: 2)
        // The first update draws; the second is within 100 ms and skipped; the complete one draws.
        #expect(output.count == 3)
        #expect(output.allSatisfy { $0.hasPrefix("\r") })
        #expect(output[0].contains("[----------]   0%"))
        #expect(output[1].contains("[##########] 100%"))
        #expect(output[2] == "\r" + "a.dump".padding(toLength: 22, withPad: " ", startingAt: 0)
            + " [##########] 100%          20 rows          10 rows/s\u{1B}[K\n")
    }

    @Test func numberFormatting() {
        #expect(ProgressFormat.grouped(0) == "0")
        #expect(ProgressFormat.grouped(999) == "999")
        #expect(ProgressFormat.grouped(1_000) == "1,000")
        #expect(ProgressFormat.grouped(-2_844_047) == "-2,844,047")
        #expect(ProgressFormat.decimal(0.456, digits: 2) == "0.46")
        #expect(ProgressFormat.decimal(12.0, digits: 1) == "12.0")
        #expect(ProgressFormat.decimal(3.04, digits: 2) == "3.04")
    }
}
