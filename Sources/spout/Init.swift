import ArgumentParser
import Foundation
import SpoutCore
import SpoutDrivers
import SpoutEndpoints

/// `spout init DIR [--from URL]`: a service folder of one's own. With `--from`, one endpoint
/// file and its SQL per table of that database (``SpoutEndpoints/ServiceScaffold``); without,
/// a configuration and one example endpoint to grow from.
struct Init: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make a service folder: config/ and sql/, from a database's tables with --from.",
        discussion: """
            Writes DIR/config/spout.yaml, DIR/config/endpoints/*.yaml and DIR/sql/. With --from, \
            each table of that database gets a paged list with filters on its indexed columns, an \
            object by its primary key, details along the foreign keys that refer to it, and \
            create/update/delete (writes need a verified token). Files that exist are never \
            replaced. Then: spout check --config DIR/config/spout.yaml, and spout serve with it.
            """
    )

    @Argument(help: "The folder to write (made if missing; files in it are never replaced).")
    var directory: String

    @Option(help: "A database (postgresql://… or sqlite:PATH) whose tables the service serves.")
    var from: String?

    func run() async throws {
        let files: [(path: String, text: String)]
        var summary: String
        // Where the configuration cannot name the database, the commands that follow must.
        var databaseArgument = ""
        if let url = self.from {
            let tables = try await Self.tables(of: url)
            let named = Self.writableURL(url)
            if named == nil { databaseArgument = " --database '…'" }
            let scaffold = ServiceScaffold(tables: tables, databaseURL: named)
            files = scaffold.files()
            summary = "\(scaffold.tables.count) table\(scaffold.tables.count == 1 ? "" : "s"): "
                + scaffold.tables.map(\.name).joined(separator: ", ")
            let hidden = tables.filter { !$0.isVisible }.map { "\($0.schema ?? "").\($0.name)" }
            if !hidden.isEmpty { summary += " (left out, not on the search path: \(hidden.joined(separator: ", ")))" }
            if scaffold.tables.isEmpty { summary = "the database holds no table: only config/spout.yaml" }
        } else {
            files = ExampleService.files
            summary = "an example endpoint, GET /hello"
        }
        let root = URL(fileURLWithPath: self.directory)
        let existing = files.map(\.path).filter { FileManager.default.fileExists(atPath: root.appendingPathComponent($0).path) }
        guard existing.isEmpty else {
            throw ValidationError("\(self.directory) already holds \(existing.joined(separator: ", ")): spout init replaces no file")
        }
        for file in files {
            let target = root.appendingPathComponent(file.path)
            try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(file.text.utf8).write(to: target)
        }
        let config = root.appendingPathComponent("config/spout.yaml").path
        print("wrote \(files.count) files to \(self.directory): \(summary)")
        print("next: spout check --config \(config)\(databaseArgument)")
        print("      spout serve --config \(config)\(databaseArgument)")
    }

    /// The user's tables of the database at `url`, as its driver's catalog lists them.
    static func tables(of url: String) async throws -> [CatalogTable] {
        var configuration = DatabaseConfiguration()
        configuration.maximumConnections = 1
        let database = try Drivers.open(url, configuration: configuration)
        defer { database.close() }
        let tables = try await database.withSession(DatabaseWork(readOnly: true)) { session in
            try await session.run { connection in try (connection as? any SchemaCatalogReading)?.schemaTables() }
        }
        guard let tables else { throw ValidationError("the \(database.dialect) driver cannot read its catalog") }
        return tables
    }

    /// What the configuration file may say of `url`: a SQLite file by its absolute path; a
    /// PostgreSQL URL only when it holds no password (else nil: SPOUT_DATABASE_URL gives it).
    static func writableURL(_ url: String) -> String? {
        if url.hasPrefix("sqlite:") {
            let path = String(url.dropFirst("sqlite:".count))
            return path.hasPrefix("/") ? url : "sqlite:" + URL(fileURLWithPath: path).standardizedFileURL.path
        }
        return Serve.redacted(url) == url ? url : nil
    }
}

/// What `spout init` without `--from` writes: a configuration on a SQLite file of its own and
/// one endpoint that needs no table.
enum ExampleService {
    static let files: [(path: String, text: String)] = [
        (
            "config/spout.yaml",
            """
            # A Spout service made by `spout init`. Every key of docs/configuration.md can be added here.

            endpoints: [endpoints/*.yaml]
            sqlDirectory: ../sql

            database:
              # Relative to the folder spout serve runs in; postgresql://… works too.
              url: sqlite:data/service.sqlite

            """
        ),
        (
            "config/endpoints/hello.yaml",
            """
            # One endpoint to grow from: add paths here and their SQL under ../sql/.
            description: A greeting.

            paths:
              /hello:
                get:
                  description: A greeting for name (or for the world).
                  sqlFile: hello/hello.sql
                  result: object
                  parameters:
                    - name: name
                      type: string
                      maxLength: 100
                      description: Who to greet.

            """
        ),
        (
            "sql/hello/hello.sql",
            """
            -- GET /hello: :name is bound as a value, never spliced into the SQL.
            SELECT 'Hello, ' || COALESCE(:name, 'world') || '!' AS "greeting"

            """
        ),
    ]
}
