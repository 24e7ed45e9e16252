import Foundation
import SpoutCore
import SpoutTestSupport
import Testing

@testable import SpoutData

/// Loads into real PostgreSQL and SQLite databases, one fresh database per test.
@Suite("EmployeesLoader")
struct EmployeesLoaderTests {
    private let loader = EmployeesLoader(sqlDirectory: DataTestFixtures.sqlDirectory)

    // MARK: The test_db fixture

    /// Loads `Tests/Fixtures/test_db` (test_db's format, with its corners) and checks every
    /// table, the corners' values and the indexes.
    @Test(arguments: [SQLDialect.postgres, .sqlite])
    func loadsTheFixture(_ dialect: SQLDialect) throws {
        try withTestDatabase(dialect) { connection throws in
            var finished: [String] = []
            var lastProgress: [String: (rows: Int, bytesDone: Int64, bytesTotal: Int64)] = [:]
            let progress = ClosureProgressReporter(
                progress: { file, rows, done, total in lastProgress[file] = (rows, done, total) },
                finished: { file, _, _ in finished.append(file) })
            let summary = try self.loader.load(directory: DataTestFixtures.sampleDirectory, into: connection, progress: progress)

            let expected = TestFixtures.TestDB.rowCounts
            #expect(try employeesCounts(connection) == expected)
            for (table, count) in expected {
                #expect(summary.rows(in: table) == Int(count))
            }
            // The order of employees.sql's `source` lines (one in capitals, one indented).
            #expect(finished == [
                "load_departments.dump", "load_employees.dump", "load_dept_emp.dump", "load_dept_manager.dump",
                "load_titles.dump", "load_salaries1.dump", "load_salaries2.dump", "load_salaries3.dump",
            ])
            #expect(summary.files.map(\.name) == finished)
            #expect(summary.files.first { $0.name == "load_salaries2.dump" }?.table == "salaries")
            for file in finished {
                let last = try #require(lastProgress[file])
                #expect(last.bytesDone == last.bytesTotal && last.bytesTotal > 0)
                #expect(last.rows == TestFixtures.TestDB.fileRowCounts[file], "\(file)")
            }
            #expect(connection.isInTransaction == false)

            #expect(try fetchRows(connection, "SELECT * FROM employees WHERE emp_no = 10001") == [
                [10001, date("1953-09-02"), "Georgi", "Facello", "M", date("1986-06-26")]
            ])
            let salaries = try fetchRows(
                connection, "SELECT salary, from_date, to_date FROM salaries WHERE emp_no = 10004 ORDER BY from_date")
            #expect(salaries.count == 4)
            #expect(salaries.first == [40054, date("1986-12-01"), date("1987-12-01")])
            #expect(salaries.last == [46065, date("1989-11-30"), date("9999-01-01")])
            // Escapes: a backslash, escaped double quotes, an escaped and a doubled single quote.
            #expect(try fetchRows(connection, "SELECT dept_name FROM departments WHERE dept_no IN ('d010', 'd011', 'd012') ORDER BY dept_no") == [
                [#"Q\A & "Audit""#], ["Partners' Desk"], ["Vendors' Desk"],
            ])
            #expect(try fetchRows(connection, "SELECT last_name FROM employees WHERE emp_no = 10013") == [["O'Brien"]])
            // UTF-8 names, within VARCHAR(14)/(16) counted in characters.
            #expect(try fetchRows(connection, "SELECT first_name, last_name FROM employees WHERE emp_no IN (10012, 10014) ORDER BY emp_no") == [
                ["Jürgen", "Müller"], ["Zoë", "Ångström"],
            ])
            // NULL, in the one nullable column.
            #expect(try fetchRows(connection, "SELECT title, to_date FROM titles WHERE emp_no = 10014") == [["Technique Leader", .null]])
            #expect(try fetchRows(connection, "SELECT count(*) FROM titles WHERE to_date IS NULL") == [[1]])

            // Secondary indexes exist after the load.
            let indexSQL = dialect == .postgres
                ? "SELECT indexname::text FROM pg_indexes WHERE indexname LIKE '%\\_idx' ORDER BY 1"
                : "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE '%idx' ORDER BY 1"
            #expect(try fetchRows(connection, indexSQL).map { $0[0] } == [
                "dept_emp_dept_no_idx", "dept_manager_dept_no_idx", "employees_first_name_idx",
                "employees_hire_date_idx", "employees_last_name_idx",
            ])
        }
    }

    // MARK: Existing tables

    @Test(arguments: [SQLDialect.postgres, .sqlite])
    func secondLoadNeedsReplace(_ dialect: SQLDialect) throws {
        let small = try DataTestFixtures.makeTemporaryDirectory()
        let other = try DataTestFixtures.makeTemporaryDirectory()
        defer {
            small.remove()
            other.remove()
        }
        let smallSummary = try EmployeesGenerator.generate(directory: small.path, employees: 40, seed: 1)
        let otherSummary = try EmployeesGenerator.generate(directory: other.path, employees: 60, seed: 2)
        try withTestDatabase(dialect) { connection throws in
            try self.loader.load(directory: small.path, into: connection)
            let before = try employeesCounts(connection)
            #expect(before["employees"] == 40)
            #expect(before["salaries"] == Int64(smallSummary.rows(in: "salaries")))

            #expect {
                try self.loader.load(directory: other.path, into: connection)
            } throws: { error in
                guard let error = error as? DataLoadError else { return false }
                return error.code == .tablesExist && error.message.contains("employees") && error.message.contains("replace")
            }
            #expect(try employeesCounts(connection) == before)

            let summary = try self.loader.load(directory: other.path, into: connection, replace: true)
            #expect(summary.rows(in: "employees") == 60)
            let after = try employeesCounts(connection)
            #expect(after["employees"] == 60)
            #expect(after["titles"] == Int64(otherSummary.rows(in: "titles")))
            #expect(after["salaries"] == Int64(otherSummary.rows(in: "salaries")))
        }
    }

    // MARK: Malformed dumps

    /// A malformed `load_salaries3.dump` (the last file, so every other table has been
    /// loaded when it fails), the reason and the position of its error.
    private static let malformedSalaries: [(name: String, text: String, reason: DataFileError.Reason, line: Int, column: Int)] = {
        let header = """
            -- malformed on line 3
            INSERT INTO `salaries` VALUES (10001,50000,'2010-01-01','2011-01-01'),

            """
        return [
            ("truncated row", header + "(10002,50000,'2010-01-01'", .truncatedRow, 3, 1),
            ("unterminated string", header + "(10002,50000,'2010-01-01','2011-01-01);\n", .unterminatedString, 3, 27),
            ("wrong column count", header + "(10002,50000,'2010-01-01'),\n(10003,1,'2010-01-01','2011-01-01');\n",
             .wrongColumnCount(expected: 4, found: 3), 3, 1),
            ("bad date", header + "(10002,50000,'2010-02-30','2011-01-01');\n", .badDate("2010-02-30"), 3, 14),
            ("unexpected character", header + "(10002,50000,'2010-01-01','2011-01-01'),\n(10003,50000;\n",
             .unexpectedCharacter(found: "';'", expected: "',' or ')' after a value"), 4, 13),
        ]
    }()

    @Test(arguments: [SQLDialect.postgres, .sqlite])
    func malformedDumpsChangeNothing(_ dialect: SQLDialect) throws {
        let original = try DataTestFixtures.makeTemporaryDirectory()
        let replacement = try DataTestFixtures.makeTemporaryDirectory()
        defer {
            original.remove()
            replacement.remove()
        }
        try EmployeesGenerator.generate(directory: original.path, employees: 30, seed: 5)
        try EmployeesGenerator.generate(directory: replacement.path, employees: 300, seed: 6)
        try withTestDatabase(dialect) { connection throws in
            try connection.executeScript("CREATE TABLE keep_me (id INTEGER); INSERT INTO keep_me VALUES (1)")
            try self.loader.load(directory: original.path, into: connection)
            let before = try employeesCounts(connection)
            let someone = try fetchRows(connection, "SELECT * FROM employees ORDER BY emp_no")

            for malformed in Self.malformedSalaries {
                let broken = try DataTestFixtures.makeTemporaryDirectory()
                defer { broken.remove() }
                try DataTestFixtures.copyFiles(from: replacement.path, to: broken.path)
                let path = (broken.path as NSString).appendingPathComponent("load_salaries3.dump")
                try FileManager.default.removeItem(atPath: path)
                try malformed.text.write(toFile: path, atomically: true, encoding: .utf8)

                #expect {
                    try self.loader.load(directory: broken.path, into: connection, replace: true)
                } throws: { error in
                    guard let error = error as? DataFileError else {
                        Issue.record("\(malformed.name): unexpected error \(String(reflecting: error))")
                        return false
                    }
                    return error.file == path && error.reason == malformed.reason && error.line == malformed.line
                        && error.column == malformed.column
                        && error.description.hasPrefix("\(path):\(malformed.line):\(malformed.column): ")
                }
                #expect(connection.isInTransaction == false, "\(malformed.name)")
                #expect(try employeesCounts(connection) == before, "\(malformed.name)")
                #expect(try fetchRows(connection, "SELECT * FROM employees ORDER BY emp_no") == someone, "\(malformed.name)")
                #expect(try countRows(connection, "keep_me") == 1)
            }
        }
    }

    /// The schema's foreign keys exist after a load, and a row that violates one fails the
    /// load and changes nothing.
    @Test(arguments: [SQLDialect.postgres, .sqlite])
    func foreignKeysHold(_ dialect: SQLDialect) throws {
        let directory = try DataTestFixtures.makeTemporaryDirectory()
        defer { directory.remove() }
        try EmployeesGenerator.generate(directory: directory.path, employees: 50, seed: 8)
        try withTestDatabase(dialect) { connection throws in
            try self.loader.load(directory: directory.path, into: connection)
            let before = try employeesCounts(connection)
            let foreignKeySQL = dialect == .postgres
                ? "SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND pg_get_constraintdef(oid) LIKE '%ON DELETE CASCADE'"
                : "SELECT count(*) FROM sqlite_master m, pragma_foreign_key_list(m.name) f WHERE m.type = 'table' AND f.on_delete = 'CASCADE'"
            #expect(try fetchRows(connection, foreignKeySQL) == [[6]])

            try DataTestFixtures.write(
                "INSERT INTO `salaries` VALUES (10001,50000,'2010-01-01','2011-01-01'),(99999,50000,'2010-01-01','2011-01-01');\n",
                to: directory.path, name: "load_salaries3.dump")
            #expect {
                try self.loader.load(directory: directory.path, into: connection, replace: true)
            } throws: { error in
                guard let error = error as? DataLoadError else { return false }
                return error.code == .database && error.underlying is DatabaseError
            }
            #expect(try employeesCounts(connection) == before)
            #expect(try fetchRows(connection, foreignKeySQL) == [[6]])

            // ON DELETE CASCADE.
            let salaries = try countRows(connection, "salaries WHERE emp_no = 10001")
            #expect(salaries > 0)
            try connection.execute(try ParsedSQL("DELETE FROM employees WHERE emp_no = 10001", dialect: connection.dialect), [])
            #expect(try countRows(connection, "salaries") == before["salaries"]! - salaries)
        }
    }

    @Test func malformedDumpOnAnEmptyDatabaseCreatesNoTable() throws {
        let directory = try DataTestFixtures.makeTemporaryDirectory()
        defer { directory.remove() }
        try EmployeesGenerator.generate(directory: directory.path, employees: 20, seed: 9)
        try DataTestFixtures.write(
            "INSERT INTO `titles` VALUES (10001,'Staff','1990-01-01',NULL),\n(10001,'Engineer','1990-13-01',NULL);\n",
            to: directory.path, name: "load_titles.dump")
        try withTestDatabase(.sqlite) { connection throws in
            #expect {
                try self.loader.load(directory: directory.path, into: connection)
            } throws: { error in
                (error as? DataFileError)?.reason == .badDate("1990-13-01") && (error as? DataFileError)?.line == 2
            }
            let existing = try DatabaseCatalog.existingTables(EmployeesLoader.tableNames, on: connection)
            #expect(existing.isEmpty)
        }
    }

    @Test func invalidValuesAreRejectedWithTheirPosition() throws {
        let directory = try DataTestFixtures.makeTemporaryDirectory()
        defer { directory.remove() }
        try EmployeesGenerator.generate(directory: directory.path, employees: 20, seed: 9)
        // (row, expected message, the value the error points at)
        let cases: [(String, String, String)] = [
            ("(10001,'1953-09-02','Georgi','Facello','X','1986-06-26')", "'X' is not allowed in column gender", "'X'"),
            ("(10001,'1953-09-02','Georgi','Facello-Facello-Facello','M','1986-06-26')", "longer than 16", "'Facello-"),
            ("(10001,NULL,'Georgi','Facello','M','1986-06-26')", "NULL in NOT NULL column birth_date", "NULL"),
            ("('10001','1953-09-02','Georgi','Facello','M','1986-06-26')", "expects an integer", "'10001'"),
            ("(10001,19530902,'Georgi','Facello','M','1986-06-26')", "expects a quoted date", "19530902"),
        ]
        try withTestDatabase(.sqlite) { connection throws in
            for (row, message, value) in cases {
                let statement = "INSERT INTO employees VALUES \(row);\n"
                // ASCII, so the character offset is the byte column.
                let column = statement.distance(from: statement.startIndex, to: try #require(statement.range(of: value)).lowerBound) + 1
                try DataTestFixtures.write(statement, to: directory.path, name: "load_employees.dump")
                #expect {
                    try self.loader.load(directory: directory.path, into: connection)
                } throws: { error in
                    guard let error = error as? DataFileError, case .invalidValue(let detail) = error.reason else { return false }
                    return detail.contains(message) && error.line == 1 && error.column == column
                }
            }
        }
    }

    @Test func unknownTablesAndMissingFiles() throws {
        let directory = try DataTestFixtures.makeTemporaryDirectory()
        defer { directory.remove() }
        try EmployeesGenerator.generate(directory: directory.path, employees: 20, seed: 9)
        try withTestDatabase(.sqlite) { connection throws in
            try DataTestFixtures.write("\n\nINSERT INTO `bonus` VALUES (1);\n", to: directory.path, name: "load_titles.dump")
            #expect {
                try self.loader.load(directory: directory.path, into: connection)
            } throws: { error in
                (error as? DataFileError)?.reason == .unknownTable("bonus") && (error as? DataFileError)?.position == SourcePosition(line: 3, column: 28)
            }
            try FileManager.default.moveItem(
                atPath: (directory.path as NSString).appendingPathComponent("load_titles.dump"),
                toPath: (directory.path as NSString).appendingPathComponent("load_titles.dump.xz"))
            #expect {
                try self.loader.load(directory: directory.path, into: connection)
            } throws: { error in
                guard let error = error as? DataLoadError else { return false }
                return error.code == .missingFile && error.message.contains("load_titles.dump.xz")
            }
            let existing = try DatabaseCatalog.existingTables(EmployeesLoader.tableNames, on: connection)
            #expect(existing.isEmpty)
        }
    }

    @Test func sourceLinesDecideTheOrder() {
        let script = """
            SELECT 'LOADING departments' as 'INFO';
            source load_departments.dump ;
              SOURCE  load_employees.dump;
            \\. extra.dump
            source show_elapsed.sql ;
            -- source commented.dump
            """
        #expect(EmployeesLoader.sourcedDumpFiles(in: script) == ["load_departments.dump", "load_employees.dump", "extra.dump"])
    }

    // MARK: Generated data

    @Test(arguments: [SQLDialect.postgres, .sqlite])
    func generatedDataLoads(_ dialect: SQLDialect) throws {
        let directory = try DataTestFixtures.makeTemporaryDirectory()
        defer { directory.remove() }
        let employees = 20_000
        let generated = try EmployeesGenerator.generate(directory: directory.path, employees: employees, seed: 11)
        try withTestDatabase(dialect) { connection throws in
            let summary = try self.loader.load(directory: directory.path, into: connection)
            let counts = try employeesCounts(connection)
            #expect(counts["employees"] == Int64(employees))
            #expect(counts["departments"] == 9)
            #expect(counts["dept_manager"] == 24)
            for (table, ratio) in [("dept_emp", 1.1), ("titles", 1.5), ("salaries", 9.5)] {
                let count = try #require(counts[table])
                #expect(count == Int64(generated.rows(in: table)))
                #expect(summary.rows(in: table) == generated.rows(in: table))
                #expect(abs(Double(count) / Double(employees) / ratio - 1) < 0.02, "\(table)")
            }
            // Every current employee has exactly one open salary.
            let open = try countRows(connection, "salaries WHERE to_date = '9999-01-01'")
            let current = try countRows(connection, "dept_emp WHERE to_date = '9999-01-01'")
            #expect(open == current)
            #expect(try fetchRows(connection, "SELECT min(salary) >= 38000, max(salary) <= 160000 FROM salaries").first?
                .allSatisfy { $0 == .integer(1) || $0 == .bool(true) } == true)
        }
    }
}
