import Foundation
import SpoutCore
import SpoutDrivers
import SpoutTestDatabases
import SpoutTestSupport

/// A small library (authors and their books) in a new database, and a service folder of one's
/// own serving it: for tests that start `spout` on endpoints a test writes, on both databases.
enum LibraryService {
    /// Portable SQL: the same tables and rows on PostgreSQL and SQLite.
    static let schema = """
        CREATE TABLE authors (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
        CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL, author_id INTEGER NOT NULL);
        INSERT INTO authors VALUES (1, 'Ursula K. Le Guin'), (2, 'Stanislaw Lem');
        INSERT INTO books VALUES (1, 'The Dispossessed', 1), (2, 'Solaris', 2), (3, 'The Left Hand of Darkness', 1);
        """

    /// A new database of `dialect` holding ``schema``; nil where PostgreSQL is not there (see
    /// ``SpoutTestDatabases/TestDatabases/make(_:prefix:)``). Drop it when done.
    static func database(_ dialect: SQLDialect) async throws -> TemporaryDatabase? {
        guard let database = try TestDatabases.make(dialect, prefix: "spout_t_library") else { return nil }
        do {
            try await onThread {
                let connection = try Drivers.driver(for: database.url).connect(readOnly: false, statistics: QueryStatistics())
                defer { connection.close() }
                try connection.executeScript(Self.schema)
            }
        } catch {
            database.drop()
            throw error
        }
        return database
    }

    /// A service folder: `config/spout.yaml` on `url`, `endpoints` as
    /// `config/api/library.yaml`, and `sqlFiles` (by path) under `queries/`, its SQL directory.
    static func folder(url: String, endpoints: String, sqlFiles: [String: String] = [:]) throws -> TemporaryDirectory {
        let service = try TemporaryDirectory()
        try service.write("config/spout.yaml", "database:\n  url: \"\(url)\"\nendpoints: [api/*.yaml]\nsqlDirectory: ../queries\n")
        try service.write("config/api/library.yaml", endpoints)
        for (path, text) in sqlFiles { try service.write("queries/" + path, text) }
        return service
    }

    /// The configuration file of a ``folder(url:endpoints:sqlFiles:)``.
    static func configFile(_ service: TemporaryDirectory) -> String {
        (service.path as NSString).appendingPathComponent("config/spout.yaml")
    }

    /// The database's name in Spout's messages.
    static func name(_ dialect: SQLDialect) -> String {
        dialect == .postgres ? "PostgreSQL" : "SQLite"
    }
}
