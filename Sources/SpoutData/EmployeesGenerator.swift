import Foundation
import SpoutCore

/// Writes a synthetic employees database in test_db's file format, for any number of
/// employees, that ``EmployeesLoader`` (and MySQL's `mysql < employees.sql`) can load.
///
/// Output, in `directory`: `employees.sql` (MySQL DDL and the `source load_*.dump` lines) and
/// `load_departments.dump`, `load_employees.dump`, `load_dept_emp.dump`,
/// `load_dept_manager.dump`, `load_titles.dump`, `load_salaries1.dump` ...
/// `load_salaries3.dump` (salaries split by thirds of the employees), each made of extended
/// INSERTs of ``defaultRowsPerStatement`` rows.
///
/// Shape, like test_db: employees numbered contiguously from 10001; the 9 real departments;
/// about 1.1 `dept_emp` rows, 1.5 `titles` rows and 9.5 `salaries` rows per employee; 24
/// `dept_manager` rows (fewer only with fewer than 4 employees). Births fall in 1952-1965,
/// hires in 1985-2000; about 20% of employees have left by 2002-08-01, the others' current
/// rows end on `9999-01-01`. Salaries are yearly rows between 38,000 and 160,000.
///
/// Deterministic: the same `employees` and `seed` give byte-identical files on every platform
/// (an own xoshiro256** generator; the standard library's random APIs are not used).
public enum EmployeesGenerator {
    public static let defaultEmployeeCount = 300_024
    public static let defaultRowsPerStatement = 300
    public static let firstEmployeeNumber = 10_001

    /// What ``generate(directory:employees:seed:rowsPerStatement:)`` wrote.
    public struct Summary: Sendable, Hashable {
        /// Rows written per table.
        public var rowCounts: [String: Int]
        /// Full paths of the files written, `employees.sql` first.
        public var files: [String]

        /// Rows written for `table` (0 for an unknown table).
        public func rows(in table: String) -> Int { self.rowCounts[table] ?? 0 }
    }

    /// The departments of test_db, in `dept_no` order.
    static let departments: [(number: String, name: String)] = [
        ("d001", "Marketing"), ("d002", "Finance"), ("d003", "Human Resources"), ("d004", "Production"),
        ("d005", "Development"), ("d006", "Quality Management"), ("d007", "Sales"), ("d008", "Research"),
        ("d009", "Customer Service"),
    ]
    /// How employees are spread over the departments (test_db's proportions).
    static let departmentWeights = [20_211, 17_346, 17_786, 73_485, 85_707, 20_117, 52_245, 21_126, 23_580]
    /// Managers per department over time (24 in all, as in test_db).
    static let managersPerDepartment = [2, 2, 2, 4, 2, 4, 2, 2, 4]
    static let singleTitles = ["Engineer", "Staff", "Senior Engineer", "Senior Staff", "Technique Leader", "Assistant Engineer"]
    static let singleTitleWeights = [115, 107, 98, 93, 15, 15]
    static let promotionTracks = [["Staff", "Senior Staff"], ["Engineer", "Senior Engineer"], ["Assistant Engineer", "Engineer"]]
    static let promotionTrackWeights = [50, 45, 5]
    static let longTrack = ["Assistant Engineer", "Engineer", "Senior Engineer"]

    /// Writes the files into `directory` (created when missing; existing files of the same
    /// names are replaced).
    ///
    /// - Parameters:
    ///   - employees: how many employees (at least 1).
    ///   - seed: any value; the same seed gives the same files.
    ///   - rowsPerStatement: rows per extended INSERT.
    @discardableResult
    public static func generate(
        directory: String, employees: Int = defaultEmployeeCount, seed: UInt64 = 1,
        rowsPerStatement: Int = defaultRowsPerStatement
    ) throws -> Summary {
        guard employees >= 1 else {
            throw DataLoadError(.invalidArgument, "the employee count must be at least 1, got \(employees)")
        }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw DataLoadError(.io, "cannot create directory \(directory)", underlying: error)
        }
        func path(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }
        func writer(_ table: String, _ file: String) throws -> DumpWriter {
            try DumpWriter(path: path(file), table: table, rowsPerStatement: rowsPerStatement)
        }

        let departmentsFile = try writer("departments", "load_departments.dump")
        let employeesFile = try writer("employees", "load_employees.dump")
        let deptEmpFile = try writer("dept_emp", "load_dept_emp.dump")
        let deptManagerFile = try writer("dept_manager", "load_dept_manager.dump")
        let titlesFile = try writer("titles", "load_titles.dump")
        let salariesFiles = [
            try writer("salaries", "load_salaries1.dump"), try writer("salaries", "load_salaries2.dump"),
            try writer("salaries", "load_salaries3.dump"),
        ]

        for department in self.departments {
            try departmentsFile.beginRow()
            departmentsFile.string(department.number)
            departmentsFile.string(department.name)
            try departmentsFile.endRow()
        }

        var random = Xoshiro256(seed: seed)
        let generator = EmployeeHistory()
        /// Up to 8 employees per department, as manager candidates.
        var candidates = Array(repeating: [Int](), count: self.departments.count)
        for index in 0..<employees {
            let number = self.firstEmployeeNumber + index
            let history = generator.make(number: number, random: &random)

            try employeesFile.beginRow()
            employeesFile.integer(number)
            employeesFile.date(days: history.birth)
            employeesFile.string(history.firstName)
            employeesFile.string(history.lastName)
            employeesFile.string(history.gender)
            employeesFile.date(days: history.hire)
            try employeesFile.endRow()

            for assignment in history.departments {
                try deptEmpFile.beginRow()
                deptEmpFile.integer(number)
                deptEmpFile.string(self.departments[assignment.department].number)
                deptEmpFile.date(days: assignment.from)
                deptEmpFile.date(days: assignment.to)
                try deptEmpFile.endRow()
                if candidates[assignment.department].count < 8 {
                    candidates[assignment.department].append(number)
                }
            }
            for title in history.titles {
                try titlesFile.beginRow()
                titlesFile.integer(number)
                titlesFile.string(title.title)
                titlesFile.date(days: title.from)
                titlesFile.date(days: title.to)
                try titlesFile.endRow()
            }
            let salariesFile = salariesFiles[min(index * 3 / employees, 2)]
            for salary in history.salaries {
                try salariesFile.beginRow()
                salariesFile.integer(number)
                salariesFile.integer(salary.amount)
                salariesFile.date(days: salary.from)
                salariesFile.date(days: salary.to)
                try salariesFile.endRow()
            }
        }

        for manager in self.managers(candidates: candidates, employees: employees, random: &random) {
            try deptManagerFile.beginRow()
            deptManagerFile.integer(manager.number)
            deptManagerFile.string(self.departments[manager.department].number)
            deptManagerFile.date(days: manager.from)
            deptManagerFile.date(days: manager.to)
            try deptManagerFile.endRow()
        }

        let dumps = [departmentsFile, employeesFile, deptEmpFile, deptManagerFile, titlesFile] + salariesFiles
        for dump in dumps {
            try dump.finish()
        }
        let script = path("employees.sql")
        do {
            try Self.mysqlScript(dumpFiles: dumps.map { ($0.path as NSString).lastPathComponent })
                .write(toFile: script, atomically: true, encoding: .utf8)
        } catch {
            throw DataLoadError(.io, "cannot write \(script)", underlying: error)
        }
        return Summary(
            rowCounts: [
                "departments": departmentsFile.rowCount, "employees": employeesFile.rowCount,
                "dept_emp": deptEmpFile.rowCount, "dept_manager": deptManagerFile.rowCount,
                "titles": titlesFile.rowCount, "salaries": salariesFiles.reduce(0) { $0 + $1.rowCount },
            ],
            files: [script] + dumps.map(\.path))
    }

    /// The manager periods of every department: consecutive terms from 1985-01-01, the last
    /// one current (`9999-01-01`), held by employees of the department when there are enough.
    static func managers(candidates: [[Int]], employees: Int, random: inout Xoshiro256)
        -> [(number: Int, department: Int, from: Int, to: Int)]
    {
        var rows: [(number: Int, department: Int, from: Int, to: Int)] = []
        let start = EmployeeHistory.day(1985, 1, 1)
        let latest = EmployeeHistory.day(2001, 8, 1)
        for (department, wanted) in self.managersPerDepartment.enumerated() {
            var chosen: [Int] = []
            for number in candidates[department] where chosen.count < wanted && !chosen.contains(number) {
                chosen.append(number)
            }
            var fallback = self.firstEmployeeNumber
            while chosen.count < wanted && fallback < self.firstEmployeeNumber + employees {
                if !chosen.contains(fallback) { chosen.append(fallback) }
                fallback += 1
            }
            var cuts: [Int] = []
            while cuts.count < chosen.count - 1 {
                let cut = random.inRange((start + 365)...latest)
                if !cuts.contains(cut) { cuts.append(cut) }
            }
            cuts.sort()
            let boundaries = [start] + cuts + [EmployeeHistory.current]
            for (term, number) in chosen.enumerated() {
                rows.append((number, department, boundaries[term], boundaries[term + 1]))
            }
        }
        return rows
    }

    /// A MySQL script in test_db's layout: the tables, then one `source` line per dump.
    static func mysqlScript(dumpFiles: [String]) -> String {
        var script = """
            --  Synthetic employees database in the format of the MySQL employees sample
            --  database (datacharmer/test_db), generated by Spout. The data is random.
            --  Load it with `spout load` or, into MySQL, with `mysql < employees.sql`.

            CREATE DATABASE IF NOT EXISTS employees;
            USE employees;

            DROP TABLE IF EXISTS dept_emp, dept_manager, titles, salaries, employees, departments;

            CREATE TABLE employees (
                emp_no      INT             NOT NULL,
                birth_date  DATE            NOT NULL,
                first_name  VARCHAR(14)     NOT NULL,
                last_name   VARCHAR(16)     NOT NULL,
                gender      ENUM ('M','F')  NOT NULL,
                hire_date   DATE            NOT NULL,
                PRIMARY KEY (emp_no)
            );

            CREATE TABLE departments (
                dept_no     CHAR(4)         NOT NULL,
                dept_name   VARCHAR(40)     NOT NULL,
                PRIMARY KEY (dept_no),
                UNIQUE  KEY (dept_name)
            );

            CREATE TABLE dept_manager (
                emp_no      INT             NOT NULL,
                dept_no     CHAR(4)         NOT NULL,
                from_date   DATE            NOT NULL,
                to_date     DATE            NOT NULL,
                FOREIGN KEY (emp_no)  REFERENCES employees (emp_no)    ON DELETE CASCADE,
                FOREIGN KEY (dept_no) REFERENCES departments (dept_no) ON DELETE CASCADE,
                PRIMARY KEY (emp_no, dept_no)
            );

            CREATE TABLE dept_emp (
                emp_no      INT             NOT NULL,
                dept_no     CHAR(4)         NOT NULL,
                from_date   DATE            NOT NULL,
                to_date     DATE            NOT NULL,
                FOREIGN KEY (emp_no)  REFERENCES employees (emp_no)    ON DELETE CASCADE,
                FOREIGN KEY (dept_no) REFERENCES departments (dept_no) ON DELETE CASCADE,
                PRIMARY KEY (emp_no, dept_no)
            );

            CREATE TABLE titles (
                emp_no      INT             NOT NULL,
                title       VARCHAR(50)     NOT NULL,
                from_date   DATE            NOT NULL,
                to_date     DATE,
                FOREIGN KEY (emp_no) REFERENCES employees (emp_no) ON DELETE CASCADE,
                PRIMARY KEY (emp_no, title, from_date)
            );

            CREATE TABLE salaries (
                emp_no      INT             NOT NULL,
                salary      INT             NOT NULL,
                from_date   DATE            NOT NULL,
                to_date     DATE            NOT NULL,
                FOREIGN KEY (emp_no) REFERENCES employees (emp_no) ON DELETE CASCADE,
                PRIMARY KEY (emp_no, from_date)
            );


            """
        for file in dumpFiles {
            script += "source \(file) ;\n"
        }
        return script
    }
}

/// Draws one employee's history: person, departments, titles and salaries.
struct EmployeeHistory {
    struct Assignment {
        var department: Int
        var from: Int
        var to: Int
    }

    struct Title {
        var title: String
        var from: Int
        var to: Int
    }

    struct Salary {
        var amount: Int
        var from: Int
        var to: Int
    }

    struct Employee {
        var birth = 0
        var hire = 0
        var firstName = ""
        var lastName = ""
        var gender = "M"
        var departments: [Assignment] = []
        var titles: [Title] = []
        var salaries: [Salary] = []
    }

    static func day(_ year: Int, _ month: Int, _ day: Int) -> Int {
        Int(CivilTime.days(year: Int64(year), month: Int64(month), day: Int64(day)))
    }

    static let current = day(9999, 1, 1)
    static let birthRange = day(1952, 2, 1)...day(1965, 2, 1)
    static let hireRange = day(1985, 1, 1)...day(2000, 1, 28)
    /// The day the data describes: rows still open then end on `9999-01-01`.
    static let snapshot = day(2002, 8, 1)
    static let leaverShare = 0.2
    static let moverShare = 0.1

    private let departmentTotal = EmployeesGenerator.departmentWeights.reduce(0, +)
    private let singleTitleTotal = EmployeesGenerator.singleTitleWeights.reduce(0, +)
    private let trackTotal = EmployeesGenerator.promotionTrackWeights.reduce(0, +)

    func make(number: Int, random: inout Xoshiro256) -> Employee {
        var employee = Employee()
        let male = random.chance(0.6)
        employee.gender = male ? "M" : "F"
        let firstNames = male ? NameLists.maleFirstNames : NameLists.femaleFirstNames
        employee.firstName = firstNames[random.below(firstNames.count)]
        employee.lastName = NameLists.lastNames[random.below(NameLists.lastNames.count)]
        employee.birth = random.inRange(Self.birthRange)
        let hire = random.inRange(Self.hireRange)
        employee.hire = hire
        let leaves = random.chance(Self.leaverShare)
        let end = leaves ? random.inRange((hire + 30)...Self.snapshot) : Self.snapshot
        let lastTo = leaves ? end : Self.current

        // Departments: one, or two with a move in between.
        let first = random.weighted(EmployeesGenerator.departmentWeights, total: self.departmentTotal)
        if random.chance(Self.moverShare) {
            let move = random.inRange((hire + 1)...(end - 1))
            var second = first
            while second == first {
                second = random.weighted(EmployeesGenerator.departmentWeights, total: self.departmentTotal)
            }
            employee.departments.append(Assignment(department: first, from: hire, to: move))
            employee.departments.append(Assignment(department: second, from: move, to: lastTo))
        } else {
            employee.departments.append(Assignment(department: first, from: hire, to: lastTo))
        }

        // Titles: 1 (55%), 2 (40%) or 3 (5%) along a promotion track.
        let draw = random.unit()
        let titles: [String]
        if draw < 0.55 {
            titles = [EmployeesGenerator.singleTitles[random.weighted(EmployeesGenerator.singleTitleWeights, total: self.singleTitleTotal)]]
        } else if draw < 0.95 {
            titles = EmployeesGenerator.promotionTracks[random.weighted(EmployeesGenerator.promotionTrackWeights, total: self.trackTotal)]
        } else {
            titles = EmployeesGenerator.longTrack
        }
        var promotions: [Int] = []
        while promotions.count < titles.count - 1 {
            let day = random.inRange((hire + 1)...(end - 1))
            if !promotions.contains(day) { promotions.append(day) }
        }
        promotions.sort()
        for (index, title) in titles.enumerated() {
            let from = index == 0 ? hire : promotions[index - 1]
            let to = index == titles.count - 1 ? lastTo : promotions[index]
            employee.titles.append(Title(title: title, from: from, to: to))
        }

        // Salaries: one row per year of service, with a raise (rarely a cut) each year.
        var amount = 38_000 + Int(random.unit() * random.unit() * 32_000) + random.below(8_000)
        var from = hire
        while true {
            let next = from + 365
            let isLast = next >= end
            employee.salaries.append(Salary(amount: amount, from: from, to: isLast ? lastTo : next))
            if isLast { break }
            from = next
            let raise = random.inRange(-10...80)
            amount = min(max(amount + amount * raise / 1000, 38_000), 160_000)
        }

        return employee
    }
}
