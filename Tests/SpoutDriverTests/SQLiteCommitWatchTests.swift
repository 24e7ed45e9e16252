import Foundation
import SpoutCore
import Testing

@testable import SpoutSQLite

/// The WAL-index header as a watch of an SQLite file's commits (``SQLiteCommitWatch``): its mark
/// changes with every commit, by any connection of any process, and with nothing else.
@Suite struct SQLiteCommitWatchTests {
    static let schema = "CREATE TABLE pet (name TEXT PRIMARY KEY, species TEXT NOT NULL); INSERT INTO pet VALUES ('Bowser', 'dog');"

    /// A fresh database file holding ``schema``, a connection that made it, and a watch of it.
    static func withWatchedDatabase(_ body: (SQLiteTestDatabase, SQLiteConnection, any CommitWatch) throws -> Void) throws {
        try SQLiteTestDatabase.with { database in
            let writer = try database.connect()
            defer { writer.close() }
            try writer.executeScript(Self.schema)
            try body(database, writer, try #require(writer.commitWatch()))
        }
    }

    @Test func aMarkChangesWithEachCommitAndOnlyThen() throws {
        try Self.withWatchedDatabase { database, writer, watch in
            let before = try #require(watch.mark())
            #expect(watch.mark() == before)
            // Reads, and a transaction that writes nothing, leave it as it is.
            let reader = try database.connect(readOnly: true)
            defer { reader.close() }
            #expect(try reader.sqliteScalar("SELECT count(*) FROM pet") == .integer(1))
            try writer.executeScript("BEGIN; SELECT 1; COMMIT;")
            #expect(watch.mark() == before)
            // Each commit moves it, whichever connection made it.
            try writer.executeScript("UPDATE pet SET species = 'cat'")
            let afterOne = try #require(watch.mark())
            #expect(afterOne != before)
            let other = try database.connect()
            defer { other.close() }
            try other.executeScript("INSERT INTO pet VALUES ('Fang', 'dog')")
            #expect(watch.mark() != afterOne)
            // A transaction rolled back commits nothing.
            let settled = watch.mark()
            try other.executeScript("BEGIN; DELETE FROM pet; ROLLBACK;")
            #expect(watch.mark() == settled)
            #expect(watch.isCurrent())
        }
    }

    @Test func theWatchHoldsNoCheckpointBackAndCommitsAfterOneStillMoveIt() throws {
        try Self.withWatchedDatabase { _, writer, watch in
            for round in 0..<3 {
                try writer.executeScript("INSERT INTO pet VALUES ('Pet\(round)', 'dog')")
                // The kept connection reads nothing: a truncating checkpoint finds no reader
                // in its way (busy 0) and empties the WAL.
                let checkpoint = try writer.sqliteRows("PRAGMA wal_checkpoint(TRUNCATE)")
                #expect(checkpoint.first?.first == .integer(0), "round \(round): \(checkpoint)")
                let emptied = try #require(watch.mark())
                try writer.executeScript("UPDATE pet SET species = 'cat\(round)'")
                #expect(watch.mark() != emptied, "round \(round)")
            }
        }
    }

    @Test func aCommitOfAnotherProcessMovesIt() throws {
        let tool = ["/usr/bin/sqlite3", "/usr/local/bin/sqlite3"].first { FileManager.default.isExecutableFile(atPath: $0) }
        try Self.withWatchedDatabase { database, _, watch in
            let before = try #require(watch.mark())
            guard let tool else {
                // scripts/test installs the sqlite3 tool; a machine without it tests the rest.
                #expect(ProcessInfo.processInfo.environment["CI"] != "true", "the sqlite3 tool is missing")
                return
            }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = [database.path, "UPDATE pet SET species = 'bird'"]
            try process.run()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
            #expect(watch.mark() != before)
        }
    }

    @Test func noWatchForAMemoryDatabaseOrAnotherJournalMode() throws {
        let memory = try SQLiteDriver(url: "sqlite::memory:")
        let connection = try sqliteConnection(memory.connect(readOnly: false, statistics: QueryStatistics()))
        defer { connection.close() }
        #expect(connection.commitWatch() == nil)
        try SQLiteTestDatabase.with { database in
            let writer = try database.connect()
            defer { writer.close() }
            try writer.executeScript("PRAGMA journal_mode = DELETE; " + Self.schema)
            #expect(writer.commitWatch() == nil)
        }
    }

    @Test func aReplacedSharedMemoryFileIsNoLongerCurrent() throws {
        try Self.withWatchedDatabase { database, _, watch in
            #expect(watch.isCurrent())
            let copy = database.directory + "/copy-shm"
            try FileManager.default.copyItem(atPath: database.path + "-shm", toPath: copy)
            #expect(rename(copy, database.path + "-shm") == 0)
            #expect(!watch.isCurrent())
        }
    }
}
