import Foundation
import SpoutCore

/// Creates and fills the `pet` and `event` tables of the MySQL menagerie example.
///
/// The tables come from `<sqlDirectory>/schema/<dialect>/pets.sql` and `pet-events.sql`; their
/// rows from `<sqlDirectory>/seed/pets.sql` and `pet-events.sql` (the manual's 9 pets and 10
/// events) or, for the pets, from a user's TSV file. Like
/// ``EmployeesLoader``, a load is all or nothing (one transaction, or the caller's) and an
/// existing `pet` table is an error unless `replace` is set.
public struct PetsLoader: Sendable {
    /// The table the loader fills.
    public static let tableName = "pet"
    /// Every table the schema script creates: `pet`, the counter its writes advance, and the
    /// pets' `event`s (dropped first on a replace: they reference `pet`).
    public static let tableNames = [tableName, "pet_version", "event"]

    public let sqlDirectory: String

    public init(sqlDirectory: String) {
        self.sqlDirectory = sqlDirectory
    }

    /// Creates `pet` and `event` and inserts the rows of `seed/pets.sql`; returns the number of
    /// pets.
    @discardableResult
    public func load(into connection: any DatabaseConnection, replace: Bool = false) throws -> Int {
        let scripts = SchemaScripts(sqlDirectory: self.sqlDirectory)
        let schemaPath = scripts.schemaPath("pets", dialect: connection.dialect)
        let seedPath = scripts.seedPath("pets")
        _ = try SchemaScripts.read(schemaPath)
        _ = try SchemaScripts.read(seedPath)
        return try Transaction.run(on: connection) {
            try EmployeesLoader.prepareTables(Self.tableNames, on: connection, replace: replace)
            try SchemaScripts.run(schemaPath, on: connection)
            try SchemaScripts.run(seedPath, on: connection)
            try self.addEvents(into: connection)
            try self.runSecurity(scripts, on: connection)
            return try withDatabaseContext("counting the rows of pet failed") {
                try DatabaseCatalog.rowCount(of: Self.tableName, on: connection)
            }
        }
    }

    /// Creates `pet` (and an empty `event`) and loads the rows of a tab-separated file; returns
    /// the number of rows.
    ///
    /// The format is MySQL's `LOAD DATA` default, as in the manual's `pet.txt`: one row per
    /// line, fields separated by tabs, in the order name, owner, species, sex, birth, death;
    /// `\N` is NULL; `\t`, `\n`, `\r`, `\0` and `\\` are escapes. A first line starting with
    /// `name<TAB>owner` is a header and skipped; blank lines are skipped. Dates must be
    /// `YYYY-MM-DD`. Errors are ``DataFileError``s with the line and column.
    @discardableResult
    public func load(tsv path: String, into connection: any DatabaseConnection, replace: Bool = false) throws -> Int {
        let scripts = SchemaScripts(sqlDirectory: self.sqlDirectory)
        let schemaPath = scripts.schemaPath("pets", dialect: connection.dialect)
        _ = try SchemaScripts.read(schemaPath)
        let rows = try Self.readTSV(path)
        return try Transaction.run(on: connection) {
            try EmployeesLoader.prepareTables(Self.tableNames, on: connection, replace: replace)
            try SchemaScripts.run(schemaPath, on: connection)
            try SchemaScripts.run(scripts.schemaPath("pet-events", dialect: connection.dialect), on: connection)
            let table = PetsSchema.table
            let written = try withDatabaseContext("loading \(path) into pet failed") { () throws -> Int in
                let inserter = try connection.bulkInsert(into: table.name, columns: table.columnNames)
                for row in rows {
                    try inserter.append(row)
                }
                return try inserter.finish()
            }
            let count = try withDatabaseContext("counting the rows of pet failed") {
                try DatabaseCatalog.rowCount(of: Self.tableName, on: connection)
            }
            try self.runSecurity(scripts, on: connection)
            guard written == rows.count, count == rows.count else {
                throw DataLoadError(.rowCountMismatch, "\(path): read \(rows.count) rows, the pet table holds \(count)")
            }
            return count
        }
    }

    /// Creates `event` and inserts the events of `seed/pet-events.sql` whose pet exists, on the
    /// caller's transaction: the whole of a new load, or the upgrade of a database whose pets
    /// were loaded before the table existed (``SQLiteSeeder``).
    public func addEvents(into connection: any DatabaseConnection) throws {
        let scripts = SchemaScripts(sqlDirectory: self.sqlDirectory)
        try SchemaScripts.run(scripts.schemaPath("pet-events", dialect: connection.dialect), on: connection)
        try SchemaScripts.run(scripts.seedPath("pet-events"), on: connection)
    }

    /// Runs `schema/<dialect>/pets-security.sql` when there is one (PostgreSQL's row-level
    /// security), after the rows are in: its policies would refuse the loader's inserts.
    private func runSecurity(_ scripts: SchemaScripts, on connection: any DatabaseConnection) throws {
        let path = scripts.schemaPath("pets-security", dialect: connection.dialect)
        guard FileManager.default.fileExists(atPath: path) else { return }
        try SchemaScripts.run(path, on: connection)
    }

    /// Parses and converts the rows of a pet TSV file.
    static func readTSV(_ path: String) throws -> [[SQLValue]] {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            guard FileManager.default.fileExists(atPath: path) else {
                throw DataLoadError(.missingFile, "missing TSV file \(path)")
            }
            throw DataLoadError(.io, "cannot read \(path)", underlying: error)
        }
        let table = PetsSchema.table
        var rows: [[SQLValue]] = []
        var lineNumber = 0
        for line in Array(data).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            var bytes = Array(line)
            if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
            if bytes.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { continue }
            if rows.isEmpty && lineNumber == 1 && bytes.starts(with: Array("name\towner".utf8)) { continue }
            var fields: [(value: SQLValue, column: Int)] = []
            var column = 1
            for field in bytes.split(separator: UInt8(ascii: "\t"), omittingEmptySubsequences: false) {
                fields.append((Self.tsvValue(Array(field)), column))
                column += field.count + 1
            }
            guard fields.count == table.columns.count else {
                throw DataFileError(
                    file: path, position: SourcePosition(line: lineNumber, column: 1),
                    reason: .wrongColumnCount(expected: table.columns.count, found: fields.count))
            }
            let values = fields.map(\.value)
            let line = lineNumber
            rows.append(
                try table.convert(values, file: path) { index in SourcePosition(line: line, column: fields[index].column) })
        }
        return rows
    }

    /// A field of a `LOAD DATA` file: `\N` is NULL, backslash escapes are decoded.
    static func tsvValue(_ field: [UInt8]) -> SQLValue {
        if field == [UInt8(ascii: "\\"), UInt8(ascii: "N")] { return .null }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(field.count)
        var index = 0
        while index < field.count {
            let byte = field[index]
            index += 1
            guard byte == UInt8(ascii: "\\"), index < field.count else {
                bytes.append(byte)
                continue
            }
            let escaped = field[index]
            index += 1
            switch escaped {
            case UInt8(ascii: "t"): bytes.append(UInt8(ascii: "\t"))
            case UInt8(ascii: "n"): bytes.append(UInt8(ascii: "\n"))
            case UInt8(ascii: "r"): bytes.append(UInt8(ascii: "\r"))
            case UInt8(ascii: "0"): bytes.append(0)
            case UInt8(ascii: "b"): bytes.append(0x08)
            case UInt8(ascii: "Z"): bytes.append(0x1A)
            default: bytes.append(escaped)
            }
        }
        return .text(String(decoding: bytes, as: UTF8.self))
    }
}
