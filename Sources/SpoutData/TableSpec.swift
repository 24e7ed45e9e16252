import SpoutCore

/// A column of a table the loaders fill, with the checks applied to each value before it is
/// sent to the database (so that PostgreSQL and SQLite reject the same rows, with a position).
struct ColumnSpec: Sendable {
    enum Kind: Sendable {
        /// A 32-bit integer (`INT`).
        case integer
        /// A `DATE`: the file holds `'YYYY-MM-DD'`, the database gets `.date(days:)`.
        case date
        /// `VARCHAR(n)`/`CHAR(n)`: at most `maxLength` characters, and one of `allowed` when given.
        case text(maxLength: Int, allowed: [String]? = nil)
    }

    var name: String
    var kind: Kind
    var nullable: Bool

    init(_ name: String, _ kind: Kind, nullable: Bool = false) {
        self.name = name
        self.kind = kind
        self.nullable = nullable
    }

    /// Converts a value read from a file into the value bound for this column, or throws a
    /// ``DataFileError`` at `position`.
    func convert(_ value: SQLValue, file: String, position: SourcePosition) throws -> SQLValue {
        func invalid(_ detail: String) -> DataFileError {
            DataFileError(file: file, position: position, reason: .invalidValue(detail))
        }
        if case .null = value {
            guard self.nullable else { throw invalid("NULL in NOT NULL column \(self.name)") }
            return .null
        }
        switch self.kind {
        case .integer:
            guard case .integer(let number) = value else {
                throw invalid("column \(self.name) expects an integer, found \(Self.describe(value))")
            }
            guard number >= Int64(Int32.min) && number <= Int64(Int32.max) else {
                throw invalid("\(number) is out of range for INT column \(self.name)")
            }
            return value
        case .date:
            guard case .text(let text) = value else {
                throw invalid("column \(self.name) expects a quoted date, found \(Self.describe(value))")
            }
            guard let days = CivilTime.parseDate(text) else {
                throw DataFileError(file: file, position: position, reason: .badDate(text))
            }
            return .date(days: days)
        case .text(let maxLength, let allowed):
            guard case .text(let text) = value else {
                throw invalid("column \(self.name) expects a quoted string, found \(Self.describe(value))")
            }
            if let allowed {
                guard allowed.contains(text) else {
                    throw invalid("'\(text)' is not allowed in column \(self.name) (allowed: \(allowed.joined(separator: ", ")))")
                }
            } else if text.unicodeScalars.count > maxLength {
                throw invalid("'\(text)' is longer than \(maxLength) characters (column \(self.name))")
            }
            return value
        }
    }

    private static func describe(_ value: SQLValue) -> String {
        switch value {
        case .integer(let number): return "the number \(number)"
        case .decimal(let text): return "the number \(text)"
        case .double(let number): return "the number \(number)"
        case .text(let text): return "'\(text)'"
        default: return "\(value)"
        }
    }
}

/// A table the loaders create and fill.
struct TableSpec: Sendable {
    var name: String
    var columns: [ColumnSpec]

    var columnNames: [String] { self.columns.map(\.name) }

    /// Converts the values of one row (already checked to have `columns.count` values).
    func convert(_ values: [SQLValue], file: String, position: (Int) -> SourcePosition) throws -> [SQLValue] {
        var converted: [SQLValue] = []
        converted.reserveCapacity(values.count)
        for (index, column) in self.columns.enumerated() {
            converted.append(try column.convert(values[index], file: file, position: position(index)))
        }
        return converted
    }
}

/// The tables of the employees sample database, in creation (foreign key) order.
enum EmployeesSchema {
    static let tables: [TableSpec] = [
        TableSpec(name: "departments", columns: [
            ColumnSpec("dept_no", .text(maxLength: 4)),
            ColumnSpec("dept_name", .text(maxLength: 40)),
        ]),
        TableSpec(name: "employees", columns: [
            ColumnSpec("emp_no", .integer),
            ColumnSpec("birth_date", .date),
            ColumnSpec("first_name", .text(maxLength: 14)),
            ColumnSpec("last_name", .text(maxLength: 16)),
            ColumnSpec("gender", .text(maxLength: 1, allowed: ["M", "F"])),
            ColumnSpec("hire_date", .date),
        ]),
        TableSpec(name: "dept_manager", columns: [
            ColumnSpec("emp_no", .integer),
            ColumnSpec("dept_no", .text(maxLength: 4)),
            ColumnSpec("from_date", .date),
            ColumnSpec("to_date", .date),
        ]),
        TableSpec(name: "dept_emp", columns: [
            ColumnSpec("emp_no", .integer),
            ColumnSpec("dept_no", .text(maxLength: 4)),
            ColumnSpec("from_date", .date),
            ColumnSpec("to_date", .date),
        ]),
        TableSpec(name: "titles", columns: [
            ColumnSpec("emp_no", .integer),
            ColumnSpec("title", .text(maxLength: 50)),
            ColumnSpec("from_date", .date),
            ColumnSpec("to_date", .date, nullable: true),
        ]),
        TableSpec(name: "salaries", columns: [
            ColumnSpec("emp_no", .integer),
            ColumnSpec("salary", .integer),
            ColumnSpec("from_date", .date),
            ColumnSpec("to_date", .date),
        ]),
    ]

    static let tableNames: [String] = tables.map(\.name)

    /// test_db's load order, used when employees.sql is missing or has no `source` lines.
    static let documentedDumpFiles = [
        "load_departments.dump", "load_employees.dump", "load_dept_emp.dump", "load_dept_manager.dump",
        "load_titles.dump", "load_salaries1.dump", "load_salaries2.dump", "load_salaries3.dump",
    ]

    static func table(named name: String) -> TableSpec? {
        let lowercased = name.lowercased()
        return self.tables.first { $0.name == lowercased }
    }
}

/// The menagerie `pet` table.
enum PetsSchema {
    static let table = TableSpec(name: "pet", columns: [
        ColumnSpec("name", .text(maxLength: 20)),
        ColumnSpec("owner", .text(maxLength: 20), nullable: true),
        ColumnSpec("species", .text(maxLength: 20), nullable: true),
        ColumnSpec("sex", .text(maxLength: 1), nullable: true),
        ColumnSpec("birth", .date, nullable: true),
        ColumnSpec("death", .date, nullable: true),
    ])
}
