import ArgumentParser
import SpoutCore
import SpoutDrivers

#if canImport(Glibc)
import Glibc
#endif

/// `spout export`: streams one query to standard output or a file.
struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stream the rows of one SQL query as JSON, JSON Lines or CSV.",
        discussion: """
            Named parameters (:name) take their values from --param name=value (as text). \
            The row count goes to standard error.
            Example: spout export --database sqlite:data/spout.sqlite \\
                       "SELECT * FROM employees WHERE last_name = :name" \\
                       --param name=Facello
            """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case json, jsonl, csv
    }

    @Option(help: "Database URL (postgresql://… or sqlite:PATH).")
    var database: String = "sqlite:data/spout.sqlite"

    @Option(help: "Output format.")
    var format: Format = .json

    @Flag(help: "Indent JSON output.")
    var pretty = false

    @Option(help: "Write to this file instead of standard output.")
    var output: String?

    @Option(name: .customLong("param"), help: "A named parameter as name=value (repeatable).")
    var parameters: [String] = []

    @Option(help: "Render dates as epoch-ms or iso-8601.")
    var dateFormat: String = DateFormat.epochMilliseconds.rawValue

    @Argument(help: "The SQL query.")
    var sql: String

    func run() async throws {
        var arguments: [String: SQLValue] = [:]
        for parameter in self.parameters {
            guard let equals = parameter.firstIndex(of: "=") else {
                throw ValidationError("--param takes name=value, got \(parameter)")
            }
            arguments[String(parameter[..<equals])] = .text(String(parameter[parameter.index(after: equals)...]))
        }
        guard let dateFormat = DateFormat(rawValue: self.dateFormat) else {
            throw ValidationError("--date-format is epoch-ms or iso-8601")
        }
        let database = try Drivers.open(self.database, configuration: DatabaseConfiguration(maximumConnections: 1, dateFormat: dateFormat))
        defer { database.close() }
        let outputFormat: OutputFormat
        switch self.format {
        case .json: outputFormat = .json(pretty: self.pretty)
        case .jsonl: outputFormat = .jsonLines
        case .csv: outputFormat = .csv
        }
        let stream = try database.query(self.sql, arguments)
        let output = self.output
        // The file is opened and written on the database's thread, which reads the rows.
        let rows = try await database.run(readOnly: true) { connection in
            try stream.write(as: outputFormat, to: try FileSink(path: output), on: connection, dateFormat: dateFormat)
        }
        var standardError = StandardError()
        print(rows == 1 ? "1 row" : "\(rows) rows", to: &standardError)
    }
}

/// Standard error as a `TextOutputStream`.
struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        var bytes = Array(string.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { Glibc.write(STDERR_FILENO, $0.baseAddress! + offset, $0.count - offset) }
            guard written > 0 else { return }
            offset += written
        }
    }
}
