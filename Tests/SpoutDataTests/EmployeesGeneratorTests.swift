import Foundation
import SpoutCore
import Testing

@testable import SpoutData

@Suite("EmployeesGenerator")
struct EmployeesGeneratorTests {
    /// Every row of every dump in `directory`, grouped by table.
    private func readAll(_ directory: String) throws -> [String: [[SQLValue]]] {
        var tables: [String: [[SQLValue]]] = [:]
        for file in try EmployeesLoader.dumpFiles(in: directory) {
            let parser = try MySQLDumpParser(contentsOfFile: file)
            while try parser.nextRow() {
                tables[parser.table, default: []].append(parser.values)
            }
        }
        return tables
    }

    private func contents(_ directory: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            files[name] = try Data(contentsOf: URL(fileURLWithPath: (directory as NSString).appendingPathComponent(name)))
        }
        return files
    }

    @Test func sameSeedSameBytesOtherSeedOtherBytes() throws {
        let first = try DataTestFixtures.makeTemporaryDirectory()
        let second = try DataTestFixtures.makeTemporaryDirectory()
        let third = try DataTestFixtures.makeTemporaryDirectory()
        defer {
            first.remove()
            second.remove()
            third.remove()
        }
        try EmployeesGenerator.generate(directory: first.path, employees: 1_500, seed: 42)
        try EmployeesGenerator.generate(directory: second.path, employees: 1_500, seed: 42)
        try EmployeesGenerator.generate(directory: third.path, employees: 1_500, seed: 43)
        let a = try self.contents(first.path)
        let b = try self.contents(second.path)
        let c = try self.contents(third.path)
        #expect(a.count == 9)
        #expect(a == b)
        #expect(a["load_employees.dump"] != c["load_employees.dump"])
        #expect(a["load_salaries1.dump"] != c["load_salaries1.dump"])
        #expect(a["load_departments.dump"] == c["load_departments.dump"])
    }

    @Test func writesTestDBFormatWithRealisticValues() throws {
        let directory = try DataTestFixtures.makeTemporaryDirectory()
        defer { directory.remove() }
        let employees = 3_000
        let summary = try EmployeesGenerator.generate(directory: directory.path, employees: employees, seed: 7, rowsPerStatement: 250)

        // employees.sql lists the dumps in test_db's order; the loader finds them.
        let files = try EmployeesLoader.dumpFiles(in: directory.path).map { ($0 as NSString).lastPathComponent }
        #expect(files == [
            "load_departments.dump", "load_employees.dump", "load_dept_emp.dump", "load_dept_manager.dump",
            "load_titles.dump", "load_salaries1.dump", "load_salaries2.dump", "load_salaries3.dump",
        ])
        // Extended INSERTs of 250 rows.
        let employeesDump = try String(contentsOfFile: (directory.path as NSString).appendingPathComponent("load_employees.dump"), encoding: .utf8)
        #expect(employeesDump.components(separatedBy: "INSERT INTO `employees` VALUES (").count - 1 == employees / 250)
        #expect(employeesDump.hasPrefix("INSERT INTO `employees` VALUES (10001,'"))

        let tables = try self.readAll(directory.path)
        for (table, rows) in tables {
            #expect(rows.count == summary.rows(in: table), "\(table)")
        }
        #expect(tables["departments"]?.first == ["d001", "Marketing"])
        #expect(tables["departments"]?.last == ["d009", "Customer Service"])
        #expect(tables["dept_manager"]?.count == 24)

        let day = { (text: String) in CivilTime.parseDate(text)! }
        let people = try #require(tables["employees"])
        #expect(people.map { $0[0] } == (0..<employees).map { SQLValue.integer(Int64(10_001 + $0)) })
        var hires: [Int64: Int64] = [:]
        var genders = Set<SQLValue>()
        for row in people {
            guard case .integer(let number) = row[0], case .text(let birth) = row[1], case .text(let first) = row[2],
                case .text(let last) = row[3], case .text(let hire) = row[5]
            else {
                Issue.record("unexpected row \(row)")
                continue
            }
            #expect((day("1952-01-01")...day("1965-12-31")).contains(day(birth)))
            #expect((day("1985-01-01")...day("2000-12-31")).contains(day(hire)))
            #expect(!first.isEmpty && first.unicodeScalars.count <= 14)
            #expect(!last.isEmpty && last.unicodeScalars.count <= 16)
            genders.insert(row[4])
            hires[number] = day(hire)
        }
        #expect(genders == ["M", "F"])

        // Salaries: yearly rows from the hire date, within range, ending on 9999-01-01 for
        // current employees; dates chain without gaps.
        let salaries = try #require(tables["salaries"])
        var byEmployee: [Int64: [[SQLValue]]] = [:]
        for row in salaries {
            guard case .integer(let number) = row[0], case .integer(let amount) = row[1] else {
                Issue.record("unexpected salary row \(row)")
                continue
            }
            #expect((38_000...160_000).contains(amount))
            byEmployee[number, default: []].append(row)
        }
        #expect(byEmployee.count == employees)
        var current = 0
        for (number, rows) in byEmployee {
            #expect(rows.first?[2] == .text(CivilTime.formatDate(days: hires[number]!)))
            for index in 1..<rows.count {
                #expect(rows[index][2] == rows[index - 1][3])
            }
            if rows.last?[3] == "9999-01-01" { current += 1 }
        }
        // About 80% are still employed.
        #expect(abs(Double(current) / Double(employees) - 0.8) < 0.05)
    }

    @Test func ratiosMatchTestDB() throws {
        let directory = try DataTestFixtures.makeTemporaryDirectory()
        defer { directory.remove() }
        let summary = try EmployeesGenerator.generate(directory: directory.path, employees: 20_000, seed: 1)
        #expect(summary.rows(in: "employees") == 20_000)
        #expect(summary.rows(in: "departments") == 9)
        #expect(summary.rows(in: "dept_manager") == 24)
        for (table, ratio) in [("dept_emp", 1.1), ("titles", 1.5), ("salaries", 9.5)] {
            let actual = Double(summary.rows(in: table)) / 20_000
            #expect(abs(actual / ratio - 1) < 0.02, "\(table): \(actual) per employee")
        }
    }

    @Test func tinyAndInvalidCounts() throws {
        let directory = try DataTestFixtures.makeTemporaryDirectory()
        defer { directory.remove() }
        let one = try EmployeesGenerator.generate(directory: directory.path, employees: 1, seed: 3)
        #expect(one.rows(in: "employees") == 1)
        // Every department is managed by the only employee.
        #expect(one.rows(in: "dept_manager") == 9)
        #expect(try self.readAll(directory.path)["dept_manager"]?.allSatisfy { $0[0] == 10001 } == true)
        #expect {
            try EmployeesGenerator.generate(directory: directory.path, employees: 0)
        } throws: { error in
            (error as? DataLoadError)?.code == .invalidArgument
        }
    }
}
