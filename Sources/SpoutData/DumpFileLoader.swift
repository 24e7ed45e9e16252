import Foundation
import SpoutCore

/// Streams the rows of MySQL dump files into their tables through bulk inserters, one file at
/// a time, and keeps the counts and times for the summary.
///
/// A dump may hold INSERTs for several tables; the loader switches inserters when the table
/// changes (PostgreSQL allows one `COPY` at a time per connection).
final class DumpFileLoader {
    private let connection: any DatabaseConnection
    private let tables: [TableSpec]
    private let blockSize: Int
    private let progressInterval: Int
    private let progress: (any LoadProgressReporter)?
    private let clock = ContinuousClock()

    /// Rows read per table, keyed by table name.
    private var rowsRead: [String: Int] = [:]
    private var secondsPerTable: [String: Double] = [:]
    private var files: [LoadSummary.File] = []

    init(
        connection: any DatabaseConnection, tables: [TableSpec], blockSize: Int, progressInterval: Int,
        progress: (any LoadProgressReporter)?
    ) {
        self.connection = connection
        self.tables = tables
        self.blockSize = blockSize
        self.progressInterval = max(progressInterval, 1)
        self.progress = progress
    }

    /// Loads every row of the dump at `path`.
    func load(file path: String) throws {
        let name = (path as NSString).lastPathComponent
        let parser = try MySQLDumpParser(contentsOfFile: path, blockSize: self.blockSize)
        defer { parser.close() }
        for table in self.tables {
            parser.expectedColumnCounts[table.name] = table.columns.count
        }
        let start = self.clock.now
        self.progress?.progress(file: name, rowsDone: 0, bytesDone: 0, bytesTotal: parser.bytesTotal)

        var current: (table: TableSpec, inserter: any BulkInserter, rows: Int, start: ContinuousClock.Instant)?
        var fileRows = 0
        var fileTable = ""
        while try parser.nextRow() {
            if current?.table.name != parser.table.lowercased() {
                if let open = current {
                    try self.finish(open.inserter, table: open.table.name, rows: open.rows, file: name, start: open.start)
                }
                let lowercased = parser.table.lowercased()
                guard let table = self.tables.first(where: { $0.name == lowercased }) else {
                    throw DataFileError(file: path, position: parser.rowPosition, reason: .unknownTable(parser.table))
                }
                let inserter = try withDatabaseContext("starting the load of \(name) into \(table.name) failed") {
                    try self.connection.bulkInsert(into: table.name, columns: table.columnNames)
                }
                current = (table, inserter, 0, self.clock.now)
                if fileTable.isEmpty { fileTable = table.name }
            }
            guard let open = current else { continue }
            let row = try open.table.convert(parser.values, file: path, position: parser.position(ofValue:))
            try withDatabaseContext("loading \(name) into \(open.table.name) failed near line \(parser.rowPosition.line)") {
                try open.inserter.append(row)
            }
            current?.rows += 1
            fileRows += 1
            if fileRows % self.progressInterval == 0 {
                self.progress?.progress(file: name, rowsDone: fileRows, bytesDone: parser.bytesRead, bytesTotal: parser.bytesTotal)
            }
        }
        if let open = current {
            try self.finish(open.inserter, table: open.table.name, rows: open.rows, file: name, start: open.start)
        }
        let seconds = secondsSince(start, clock: self.clock)
        self.files.append(
            LoadSummary.File(name: name, table: fileTable, rows: fileRows, bytes: parser.bytesTotal, seconds: seconds))
        self.progress?.progress(file: name, rowsDone: fileRows, bytesDone: parser.bytesTotal, bytesTotal: parser.bytesTotal)
        self.progress?.finished(file: name, rows: fileRows, seconds: seconds)
    }

    private func finish(_ inserter: any BulkInserter, table: String, rows: Int, file: String, start: ContinuousClock.Instant) throws {
        let written = try withDatabaseContext("loading \(file) into \(table) failed") {
            try inserter.finish()
        }
        guard written == rows else {
            throw DataLoadError(.rowCountMismatch, "\(file): read \(rows) rows for \(table), the database wrote \(written)")
        }
        self.rowsRead[table, default: 0] += rows
        self.secondsPerTable[table, default: 0] += secondsSince(start, clock: self.clock)
    }

    /// Checks that each table holds exactly the rows read into it.
    func verifyRowCounts() throws {
        for table in self.tables {
            let expected = self.rowsRead[table.name] ?? 0
            let actual = try withDatabaseContext("counting the rows of \(table.name) failed") {
                try DatabaseCatalog.rowCount(of: table.name, on: self.connection)
            }
            guard actual == expected else {
                throw DataLoadError(.rowCountMismatch, "table \(table.name) holds \(actual) rows, \(expected) were read")
            }
        }
    }

    func summary() -> LoadSummary {
        LoadSummary(
            tables: self.tables.map { table in
                LoadSummary.Table(
                    name: table.name, rows: self.rowsRead[table.name] ?? 0, seconds: self.secondsPerTable[table.name] ?? 0)
            },
            files: self.files,
            seconds: 0)
    }
}
