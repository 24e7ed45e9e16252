import Foundation
import SpoutCore

/// Spout's schema and seed scripts under an `sql` directory:
/// `schema/<dialect>/<name>.sql` and `seed/<name>.sql`.
struct SchemaScripts: Sendable {
    let sqlDirectory: String

    func schemaPath(_ name: String, dialect: SQLDialect) -> String {
        (self.sqlDirectory as NSString).appendingPathComponent("schema/\(dialect.rawValue)/\(name).sql")
    }

    func seedPath(_ name: String) -> String {
        (self.sqlDirectory as NSString).appendingPathComponent("seed/\(name).sql")
    }

    /// Reads the script at `path`.
    static func read(_ path: String) throws -> String {
        guard FileManager.default.fileExists(atPath: path) else {
            throw DataLoadError(.missingFile, "missing SQL script \(path)")
        }
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw DataLoadError(.io, "cannot read \(path)", underlying: error)
        }
    }

    /// Runs the script at `path`; a database error becomes a ``DataLoadError`` naming it.
    static func run(_ path: String, on connection: any DatabaseConnection) throws {
        let script = try self.read(path)
        do {
            try connection.executeScript(script)
        } catch {
            throw DataLoadError(.database, "running \(path) failed", underlying: error)
        }
    }
}
