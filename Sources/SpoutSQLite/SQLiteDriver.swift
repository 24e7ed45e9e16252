import CSQLite3
import SpoutCore
import Synchronization

/// Opens connections to one SQLite database.
///
/// URLs:
/// - `sqlite:PATH`: a database file, relative to the working directory or absolute
///   (`sqlite:data/spout.sqlite`, `sqlite:/tmp/x.db`). Read-write connections create it when
///   missing; read-only connections fail with ``DatabaseError/Code/connectionFailed`` then.
/// - `sqlite::memory:`: an in-memory database private to this driver. Every connection of the
///   driver sees the same database (a shared-cache memory database with a name unique to the
///   driver), which lives as long as the driver does.
///
/// In-memory databases use shared-cache table locks instead of WAL: a write to a table that
/// an open cursor of another connection is reading fails rather than waiting.
public final class SQLiteDriver: DatabaseDriver {
    public var dialect: SQLDialect { .sqlite }
    /// True: read-only connections are opened with `SQLITE_OPEN_READONLY`.
    public var hasReadOnlyConnections: Bool { true }
    /// The database file, or nil for `sqlite::memory:`.
    public let path: String?
    /// How long a connection waits for another connection's lock before failing.
    public let busyTimeoutMilliseconds: Int

    /// What `sqlite3_open_v2` opens: the path, or the shared-cache URI of the memory database.
    private let filename: String
    private let openFlags: Int32
    /// Keeps the in-memory database alive between connections.
    private let memoryAnchor: SQLiteMemoryAnchor?

    private static let memoryDatabaseCounter = Atomic<Int>(0)

    /// Creates a driver for `url` (see the type's documentation). A memory database is created
    /// here; a file is only opened by ``connect(readOnly:statistics:)``.
    /// - Throws: ``DatabaseError/Code/invalidURL`` for anything but `sqlite:PATH` and
    ///   `sqlite::memory:`; ``DatabaseError/Code/connectionFailed`` when the memory database
    ///   cannot be created.
    public init(url: String, busyTimeoutMilliseconds: Int = 5000) throws {
        let scheme = "sqlite:"
        guard url.hasPrefix(scheme) else {
            throw DatabaseError(
                .invalidURL, message: "an SQLite URL starts with sqlite: (sqlite:PATH or sqlite::memory:)")
        }
        let location = String(url.dropFirst(scheme.count))
        guard !location.isEmpty, !location.hasPrefix("//"), !location.utf8.contains(0) else {
            throw DatabaseError(.invalidURL, message: "an SQLite URL is sqlite:PATH or sqlite::memory:, got \(url)")
        }
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        if location == ":memory:" {
            let number = Self.memoryDatabaseCounter.wrappingAdd(1, ordering: .relaxed).newValue
            self.path = nil
            self.filename = "file:spout-mem-\(number)?mode=memory&cache=shared"
            self.openFlags = SQLITE_OPEN_URI
            self.memoryAnchor = try SQLiteMemoryAnchor(uri: self.filename)
        } else {
            self.path = location
            self.filename = location
            self.openFlags = 0
            self.memoryAnchor = nil
        }
    }

    public func connect(readOnly: Bool, statistics: QueryStatistics) throws -> any DatabaseConnection {
        try SQLiteConnection(
            filename: self.filename, flags: self.openFlags, readOnly: readOnly,
            busyTimeoutMilliseconds: self.busyTimeoutMilliseconds, statistics: statistics)
    }
}

/// One open handle on a shared-cache memory database: SQLite drops such a database when its
/// last connection closes, and this one closes only with its driver.
///
/// `@unchecked Sendable`: the handle is only touched by `init` and `deinit`, never in between.
final class SQLiteMemoryAnchor: @unchecked Sendable {
    private let handle: OpaquePointer

    init(uri: String) throws {
        var opened: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX
        let result = sqlite3_open_v2(uri, &opened, flags, nil)
        guard result == SQLITE_OK, let handle = opened else {
            let message = SQLiteErrorMapping.message(opened, code: result)
            sqlite3_close_v2(opened)
            throw DatabaseError(
                .connectionFailed, message: "cannot create SQLite memory database: \(message)",
                sqlState: String(result))
        }
        self.handle = handle
    }

    deinit {
        sqlite3_close_v2(self.handle)
    }
}
