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

/// Runs work inside one transaction.
enum Transaction {
    /// Runs `body` in a new transaction that commits when it returns and rolls back when it
    /// throws. When the connection is already in a transaction, `body` runs inside it and the
    /// caller decides (and must roll back after an error).
    static func run<Result>(on connection: any DatabaseConnection, _ body: () throws -> Result) throws -> Result {
        if connection.isInTransaction {
            return try body()
        }
        try connection.begin(readOnly: false)
        let result: Result
        do {
            result = try body()
        } catch {
            try? connection.rollback()
            throw error
        }
        do {
            try connection.commit()
        } catch {
            if connection.isInTransaction { try? connection.rollback() }
            throw DataLoadError(.database, "committing the load failed", underlying: error)
        }
        return result
    }
}

/// Rewraps a driver error as a ``DataLoadError`` with `context`; file errors pass through.
func withDatabaseContext<Result>(_ context: @autoclosure () -> String, _ body: () throws -> Result) throws -> Result {
    do {
        return try body()
    } catch let error as DataFileError {
        throw error
    } catch let error as DataLoadError {
        throw error
    } catch {
        throw DataLoadError(.database, context(), underlying: error)
    }
}

/// Seconds since `start` on `clock`.
func secondsSince(_ start: ContinuousClock.Instant, clock: ContinuousClock = ContinuousClock()) -> Double {
    ProgressFormat.seconds(clock.now - start)
}
