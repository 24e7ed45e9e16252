import Foundation
import SpoutCore
import Testing

@testable import SpoutSQLite

/// A database that cannot be opened is reported with its path and the reason, for the operator
/// (at startup this is the whole error on standard error). The failures are ones that root,
/// which the tests usually run as, cannot get around either.
@Suite struct SQLiteOpenErrorTests {
    /// The `connectionFailed` error of a read-write connection to `path`.
    func openFailure(_ path: String, readOnly: Bool = false) throws -> DatabaseError {
        let driver = try SQLiteDriver(url: "sqlite:" + path)
        let error = try #require(throws: DatabaseError.self) {
            _ = try driver.connect(readOnly: readOnly, statistics: QueryStatistics())
        }
        #expect(error.code == .connectionFailed)
        return error
    }

    @Test func parentIsARegularFile() throws {
        try SQLiteTestDatabase.with { database in
            let file = database.directory + "/plain-file"
            #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
            let path = file + "/spout.sqlite"
            let error = try self.openFailure(path)
            #expect(
                error.message == "cannot open sqlite:\(path): unable to open database file: not a directory",
                "\(error.message)")
            #expect(!String(describing: error).contains(path), "the description stays generic for HTTP clients")
            #expect(String(reflecting: error).contains(error.message))
        }
    }

    @Test func pathIsADirectory() throws {
        try SQLiteTestDatabase.with { database in
            let error = try self.openFailure(database.directory)
            #expect(error.message.hasPrefix("cannot open sqlite:\(database.directory): "), "\(error.message)")
            #expect(error.message.hasSuffix(": is a directory"), "\(error.message)")
        }
    }

    @Test func missingFileForAReadOnlyConnection() throws {
        try SQLiteTestDatabase.with { database in
            let error = try self.openFailure(database.path, readOnly: true)
            #expect(
                error.message == "cannot open sqlite:\(database.path): unable to open database file: no such file or directory",
                "\(error.message)")
        }
    }

    /// Run as root, permissions refuse nothing and the hint cannot be seen here; the container
    /// check shows it for a bind mount the image's user cannot write (docs/deploy/).
    @Test(.enabled(if: geteuid() != 0, "root may write any directory"))
    func directoryNotWritable() throws {
        try SQLiteTestDatabase.with { database in
            let directory = database.directory + "/read-only"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            #expect(chmod(directory, 0o555) == 0)
            defer { chmod(directory, 0o755) }
            let path = directory + "/spout.sqlite"
            let error = try self.openFailure(path)
            #expect(
                error.message == "cannot open sqlite:\(path): unable to open database file: permission denied "
                    + "(the directory \(directory) is not writable by uid \(geteuid()))",
                "\(error.message)")
        }
    }

    @Test func directoryOfAPath() {
        #expect(SQLiteConnection.directory(of: "/app/data/spout.sqlite") == "/app/data")
        #expect(SQLiteConnection.directory(of: "data/spout.sqlite") == "data")
        #expect(SQLiteConnection.directory(of: "spout.sqlite") == ".")
        #expect(SQLiteConnection.directory(of: "/spout.sqlite") == "/")
    }
}
