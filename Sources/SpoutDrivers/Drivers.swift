import SpoutCore
import SpoutPostgres
import SpoutSQLite

/// Picks the driver for a database URL.
public enum Drivers {
    /// `postgresql://…` or `postgres://…` → PostgreSQL (libpq); `sqlite:PATH` or
    /// `sqlite::memory:` → SQLite. Anything else throws ``DatabaseError/Code/invalidURL``
    /// (the message never repeats the URL, which may hold a password).
    /// `preparedStatements: false` is for PostgreSQL behind a transaction pooler (see
    /// ``DatabaseConfiguration/preparedStatements``); SQLite ignores it, and `applicationName`
    /// (``DatabaseConfiguration/applicationName``) and `answerGraceMilliseconds`
    /// (``DatabaseConfiguration/answerGraceMilliseconds``).
    public static func driver(
        for url: String, sqliteBusyTimeoutMilliseconds: Int = 5000, preparedStatements: Bool = true, applicationName: String? = nil,
        answerGraceMilliseconds: Int = 0
    ) throws -> any DatabaseDriver {
        if url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") {
            return try PostgresDriver(
                url: url, preparedStatements: preparedStatements, applicationName: applicationName,
                answerGraceMilliseconds: answerGraceMilliseconds)
        }
        if url.hasPrefix("sqlite:") {
            return try SQLiteDriver(url: url, busyTimeoutMilliseconds: sqliteBusyTimeoutMilliseconds)
        }
        throw DatabaseError(.invalidURL, message: "a database URL starts with postgresql://, postgres:// or sqlite:")
    }

    /// The driver for `url` with the driver settings of `configuration`.
    private static func driver(for url: String, configuration: DatabaseConfiguration) throws -> any DatabaseDriver {
        try self.driver(
            for: url, preparedStatements: configuration.preparedStatements, applicationName: configuration.applicationName,
            answerGraceMilliseconds: configuration.answerGraceMilliseconds)
    }

    /// Opens a pooled database for `url`.
    public static func open(_ url: String, configuration: DatabaseConfiguration = DatabaseConfiguration()) throws -> Database {
        Database(driver: try self.driver(for: url, configuration: configuration), configuration: configuration)
    }

    /// Opens the database at `url` with the read replicas at `replicaURLs` (`replica 1`,
    /// `replica 2`, ... in order), each with a pool like the primary's, all heard by
    /// `observer` (``SpoutCore/Database/observer``). Nothing connects yet.
    public static func open(
        _ url: String, replicaURLs: [String], maximumLag: Duration?, configuration: DatabaseConfiguration = DatabaseConfiguration(),
        observer: (any DatabaseObserver)? = nil
    ) throws -> Database {
        let driver = try self.driver(for: url, configuration: configuration)
        if !replicaURLs.isEmpty && driver.dialect != .postgres {
            throw DatabaseError(.invalidURL, message: "read replicas need a PostgreSQL primary (database.url)")
        }
        let replicas = try replicaURLs.enumerated().map { index, replicaURL in
            let replica = try self.driver(for: replicaURL, configuration: configuration)
            return ReadReplicas.Replica(
                database: Database(driver: replica, configuration: configuration, name: "replica \(index + 1)", observer: observer))
        }
        return Database(driver: driver, configuration: configuration, replicas: ReadReplicas(replicas, maximumLag: maximumLag), observer: observer)
    }
}
