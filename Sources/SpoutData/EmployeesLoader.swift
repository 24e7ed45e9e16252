import Foundation
import SpoutCore

/// Loads the MySQL employees sample database (datacharmer/test_db format) into PostgreSQL or
/// SQLite.
///
/// The directory holds test_db's `employees.sql` and its `load_*.dump` files (the original
/// 300,024 employees, a subset, or the output of ``EmployeesGenerator``). The load:
/// 1. finds the dump files from the `source load_*.dump` lines of `employees.sql`, in their
///    order (test_db's documented order when `employees.sql` is missing or names none);
/// 2. checks that none of the tables exist, or drops them when `replace` is set;
/// 3. creates the tables from Spout's own `<sqlDirectory>/schema/<dialect>/employees.sql`
///    (test_db's MySQL DDL is not used);
/// 4. streams every dump through ``MySQLDumpParser`` into ``DatabaseConnection/bulkInsert(into:columns:)``
///    (PostgreSQL `COPY`, SQLite a reused prepared INSERT), converting and checking each value
///    (DATE columns must be valid `YYYY-MM-DD`, lengths, NULLs, gender);
/// 5. on PostgreSQL, adds the foreign keys of the schema after the data (they are dropped
///    right after the tables are created: validating them in one pass is much faster than
///    checking each row during `COPY`; the final schema is the script's);
/// 6. creates the secondary indexes (`employees-indexes.sql`), runs `ANALYZE` on each table,
///    and checks that every table holds exactly the rows read.
///
/// All or nothing: everything runs in one transaction (DDL included; both databases have
/// transactional DDL), so after any error the database is exactly as before. When the
/// connection is already in a transaction, the load runs inside it and the caller commits or
/// rolls back.
///
/// Errors: ``DataFileError`` (with `file:line:column`) for a malformed dump;
/// ``DataLoadError`` for missing files, existing tables (``DataLoadError/Code/tablesExist``),
/// count mismatches, and database failures (with the driver's error as `underlying`).
public struct EmployeesLoader: Sendable {
    /// The names of the tables the loader creates, in creation order.
    public static let tableNames: [String] = EmployeesSchema.tableNames

    /// Spout's `sql` directory (holding `schema/postgres/...` and `schema/sqlite/...`).
    public let sqlDirectory: String
    /// Dump files are read in blocks of this many bytes.
    public var blockSize: Int = 256 * 1024
    /// A progress update is sent every this many rows (and at the start and end of each file).
    public var progressInterval: Int = 5_000

    public init(sqlDirectory: String) {
        self.sqlDirectory = sqlDirectory
    }

    /// Loads the dump files of `directory` into the database of `connection` (see the type's
    /// documentation). Blocks until done.
    ///
    /// - Parameters:
    ///   - replace: drop the tables first when they exist (inside the same transaction);
    ///     without it, existing tables are an error and nothing is changed.
    ///   - progress: receives per-file progress; nil for none.
    /// - Returns: rows and seconds per table and per file.
    @discardableResult
    public func load(
        directory: String, into connection: any DatabaseConnection, replace: Bool = false,
        progress: (any LoadProgressReporter)? = nil
    ) throws -> LoadSummary {
        let clock = ContinuousClock()
        let start = clock.now
        let files = try Self.dumpFiles(in: directory)
        let scripts = SchemaScripts(sqlDirectory: self.sqlDirectory)
        let dialect = connection.dialect
        let schemaPath = scripts.schemaPath("employees", dialect: dialect)
        let indexesPath = scripts.schemaPath("employees-indexes", dialect: dialect)
        // Read the scripts before touching the database, so a missing one changes nothing.
        _ = try SchemaScripts.read(schemaPath)
        _ = try SchemaScripts.read(indexesPath)

        var summary = try Transaction.run(on: connection) { () throws -> LoadSummary in
            try Self.prepareTables(EmployeesSchema.tableNames, on: connection, replace: replace)
            try SchemaScripts.run(schemaPath, on: connection)
            // PostgreSQL checks a foreign key row by row during COPY (a quarter of the load
            // time); adding the constraints after the data validates them in one pass.
            let foreignKeys = try withDatabaseContext("reading the foreign keys failed") {
                try DatabaseCatalog.foreignKeys(of: EmployeesSchema.tableNames, on: connection)
            }
            for constraint in foreignKeys {
                try withDatabaseContext("dropping \(constraint.name) before the load failed") {
                    try connection.executeScript("ALTER TABLE \(constraint.table) DROP CONSTRAINT \(constraint.quotedName)")
                }
            }
            let loader = DumpFileLoader(
                connection: connection, tables: EmployeesSchema.tables, blockSize: self.blockSize,
                progressInterval: self.progressInterval, progress: progress)
            for file in files {
                try loader.load(file: file)
            }
            for constraint in foreignKeys {
                try withDatabaseContext("the data violates \(constraint.table) \(constraint.definition)") {
                    try connection.executeScript(
                        "ALTER TABLE \(constraint.table) ADD CONSTRAINT \(constraint.quotedName) \(constraint.definition)")
                }
            }
            try SchemaScripts.run(indexesPath, on: connection)
            for table in EmployeesSchema.tableNames {
                try withDatabaseContext("ANALYZE \(table) failed") {
                    try connection.executeScript("ANALYZE \(table)")
                }
            }
            try loader.verifyRowCounts()
            return loader.summary()
        }
        summary.seconds = secondsSince(start, clock: clock)
        return summary
    }

    /// The dump files of a test_db directory, as full paths, in load order: the targets of the
    /// `source X.dump` lines of `employees.sql` (`\. X.dump` too), or test_db's documented
    /// order when there is no `employees.sql` or it names no `.dump` file.
    ///
    /// - Throws: ``DataLoadError/Code/missingFile`` when a dump file does not exist (with a
    ///   hint when only its `.xz` or `.gz` is there).
    public static func dumpFiles(in directory: String) throws -> [String] {
        let scriptPath = (directory as NSString).appendingPathComponent("employees.sql")
        var names: [String] = []
        if FileManager.default.fileExists(atPath: scriptPath) {
            names = Self.sourcedDumpFiles(in: try SchemaScripts.read(scriptPath))
        }
        if names.isEmpty {
            names = EmployeesSchema.documentedDumpFiles
        }
        return try names.map { name in
            let path = (directory as NSString).appendingPathComponent(name)
            guard FileManager.default.fileExists(atPath: path) else {
                for suffix in [".xz", ".gz", ".bz2"] where FileManager.default.fileExists(atPath: path + suffix) {
                    throw DataLoadError(.missingFile, "missing dump file \(path) (decompress \(name + suffix) first)")
                }
                throw DataLoadError(.missingFile, "missing dump file \(path)")
            }
            return path
        }
    }

    /// The `.dump` files named by `source` (or `\.`) lines of a MySQL script, in order.
    static func sourcedDumpFiles(in script: String) -> [String] {
        var names: [String] = []
        for line in script.split(whereSeparator: \.isNewline) {
            var text = line.trimmingCharacters(in: .whitespaces)
            if text.lowercased().hasPrefix("source ") {
                text = String(text.dropFirst("source ".count))
            } else if text.hasPrefix("\\. ") {
                text = String(text.dropFirst(3))
            } else {
                continue
            }
            while text.hasSuffix(";") || text.hasSuffix(" ") || text.hasSuffix("\t") {
                text.removeLast()
            }
            text = text.trimmingCharacters(in: .whitespaces)
            if text.hasSuffix(".dump") && !names.contains(text) {
                names.append(text)
            }
        }
        return names
    }

    /// Fails when any of `tables` exists, or drops them (in reverse order) when `replace` is set.
    static func prepareTables(_ tables: [String], on connection: any DatabaseConnection, replace: Bool) throws {
        let existing = try withDatabaseContext("reading the database catalog failed") {
            try DatabaseCatalog.existingTables(tables, on: connection)
        }
        guard !existing.isEmpty else { return }
        guard replace else {
            throw DataLoadError(
                .tablesExist,
                "the database already has \(existing.count == 1 ? "table" : "tables") \(existing.joined(separator: ", ")); "
                    + "load with --replace to drop and recreate \(existing.count == 1 ? "it" : "them")")
        }
        for table in tables.reversed() where existing.contains(table) {
            try withDatabaseContext("dropping table \(table) failed") {
                try connection.executeScript("DROP TABLE \(table)")
            }
        }
    }
}
