import SpoutCore
import SpoutPostgres
import SpoutSQLite

/// Picks the driver for a database URL.
public enum Drivers {
    /// `postgresql://…` or `postgres://…` → PostgreSQL (libpq); `sqlite:PATH` or
    /// `sqlite::memory:` → SQLite. Anything else throws ``DatabaseError/Code/invalidURL``
    /// (the message never repeats the URL, which may hold a password).
    /// `preparedStatements: false` is for PostgreSQL behind a transaction pooler (see
    /// ``DatabaseConfiguration/preparedStatements``); SQLite ignores it.
    public static func driver(
        for url: String, sqliteBusyTimeoutMilliseconds: Int = 5000, preparedStatements: Bool = true
    ) throws -> any DatabaseDriver {
        if url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") {
            return try PostgresDriver(url: url, preparedStatements: preparedStatements)
        }
        if url.hasPrefix("sqlite:") {
            return try SQLiteDriver(url: url, busyTimeoutMilliseconds: sqliteBusyTimeoutMilliseconds)
        }
        throw DatabaseError(.invalidURL, message: "a database URL starts with postgresql://, postgres:// or sqlite:")
    }

    /// Opens a pooled database for `url`.
    public static func open(_ url: String, configuration: DatabaseConfiguration = DatabaseConfiguration()) throws -> Database {
        Database(driver: try self.driver(for: url, preparedStatements: configuration.preparedStatements), configuration: configuration)
    }

    /// Opens the database at `url` with the read replicas at `replicaURLs` (`replica 1`,
    /// `replica 2`, ... in order), each with a pool like the primary's. Nothing connects yet.
    public static func open(
        _ url: String, replicaURLs: [String], maximumLag: Duration?, configuration: DatabaseConfiguration = DatabaseConfiguration()
    ) throws -> Database {
        let driver = try self.driver(for: url, preparedStatements: configuration.preparedStatements)
        if !replicaURLs.isEmpty && driver.dialect != .postgres {
            throw DatabaseError(.invalidURL, message: "read replicas need a PostgreSQL primary (database.url)")
        }
        let replicas = try replicaURLs.enumerated().map { index, replicaURL in
            let replica = try self.driver(for: replicaURL, preparedStatements: configuration.preparedStatements)
            return ReadReplicas.Replica(database: Database(driver: replica, configuration: configuration, name: "replica \(index + 1)"))
        }
        return Database(driver: driver, configuration: configuration, replicas: ReadReplicas(replicas, maximumLag: maximumLag))
    }
}
