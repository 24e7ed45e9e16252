/// An error from a database driver or the connection pool.
///
/// `description` is deliberately generic ("database error: statement timeout") so that it can
/// never leak SQL text, database messages or credentials to an HTTP client by accident. The
/// details (`message`, `sqlState`) are for logs: use `String(reflecting:)` or read the fields.
public struct DatabaseError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What kind of failure this is. New codes can be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { self.name }

        /// No connection became free within the pool's acquire timeout (HTTP 503).
        public static let poolExhausted = Code("pool exhausted")
        /// A new connection could not be opened (HTTP 503).
        public static let connectionFailed = Code("connection failed")
        /// The connection broke while in use; the pool discards it (HTTP 503).
        public static let connectionLost = Code("connection lost")
        /// The statement ran longer than its timeout (HTTP 504).
        public static let statementTimeout = Code("statement timeout")
        /// The data is locked by another transaction or process past the wait allowed for it
        /// (SQLite's busy timeout, PostgreSQL's `lock_timeout`), or the transaction was rolled
        /// back for another's sake (a deadlock's victim); worth retrying (HTTP 503).
        public static let busy = Code("database busy")
        /// A transaction that reads one snapshot (``RequestTransaction/snapshot``) wrote a row
        /// another transaction changed after it (PostgreSQL's `serialization_failure`): rolled
        /// back; run again, it sees the change (HTTP 503).
        public static let serializationFailure = Code("serialization failure")
        /// The server did not answer within the statement timeout and a grace period (stopped,
        /// frozen or cut off by the network); the connection was shut (HTTP 504).
        public static let notAnswering = Code("database not answering")
        /// The database could not write: its disk is full (PostgreSQL's `disk_full`, SQLite's
        /// `SQLITE_FULL`, which a full file system gives too). The statement's transaction is
        /// rolled back; reads go on, and writes succeed once space is freed (HTTP 507).
        public static let storageFull = Code("database storage full")
        /// The statement was cancelled through ``DatabaseConnection/cancel()``.
        public static let cancelled = Code("cancelled")
        /// A UNIQUE or PRIMARY KEY constraint was violated (HTTP 409).
        public static let uniqueViolation = Code("unique violation")
        /// Another integrity constraint (NOT NULL, CHECK, FOREIGN KEY) was violated (HTTP 422).
        public static let constraintViolation = Code("constraint violation")
        /// A value could not be converted by the database (HTTP 400 when it came from the caller).
        public static let invalidValue = Code("invalid value")
        /// Text sent to the database has a character its encoding cannot hold (a `LATIN1`
        /// database and a `€`, PostgreSQL's 22P05): the caller's text (HTTP 400).
        public static let unrepresentableText = Code("text not representable in the database's encoding")
        /// A write was attempted on a read-only transaction or connection.
        public static let readOnly = Code("read only")
        /// The server takes no writes any more: it is a standby (a primary demoted by a
        /// failover, or a server a pooler now points at). Not the request's fault: the driver
        /// gives the connection up, so the pool opens the next one where the URL leads, to the
        /// primary once there is one again (HTTP 503 with `Retry-After`).
        public static let serverReadOnly = Code("database server read only")
        /// The SQL text is malformed or refers to unknown objects.
        public static let invalidSQL = Code("invalid SQL")
        /// The database refused the statement for the role or identity it ran as: a
        /// row-level security policy, or a privilege the role lacks (PostgreSQL's 42501).
        public static let permissionDenied = Code("permission denied")
        /// The request is not supported by this driver or format.
        public static let unsupported = Code("unsupported")
        /// The database URL is malformed.
        public static let invalidURL = Code("invalid URL")
        /// Anything else the database reported.
        public static let other = Code("database error")
    }

    public var code: Code
    /// The database's own message. Never show it to HTTP clients.
    public var message: String
    /// The SQLSTATE (PostgreSQL) or extended result code (SQLite), when known.
    public var sqlState: String?
    /// For a unique or NOT NULL violation, what the database said it concerns (its columns,
    /// or PostgreSQL's index); nil for other errors and when it said nothing usable.
    public var violated: ViolatedConstraint?

    public init(_ code: Code, message: String = "", sqlState: String? = nil, violated: ViolatedConstraint? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.violated = violated
    }

    public var description: String { "database error: \(self.code)" }

    public var debugDescription: String {
        var text = "database error: \(self.code)"
        if let sqlState = self.sqlState { text += " [\(sqlState)]" }
        if !self.message.isEmpty { text += ": \(self.message)" }
        return text
    }
}
