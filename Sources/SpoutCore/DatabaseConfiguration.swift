/// How a ``Database`` pools connections and encodes values.
public struct DatabaseConfiguration: Sendable, Hashable {
    /// The most connections open at once (read-write and read-only together on PostgreSQL; on
    /// SQLite this bounds the read-only connections, and writes share one connection).
    public var maximumConnections: Int
    /// How long ``Database/lease(readOnly:)`` waits for a free connection before it throws
    /// ``DatabaseError/Code/poolExhausted``.
    public var acquireTimeout: Duration
    /// Parent rows per batched child query for attached arrays (PostgreSQL).
    public var attachmentBatchSize: Int
    /// Rows per batch when a result is streamed. On PostgreSQL a streamed result is read through
    /// a server-side cursor, `FETCH fetchSize` at a time (fewer when rows are wide: a batch
    /// stays near 1 MiB of libpq memory), each FETCH a statement of its own
    /// under the statement timeout; on SQLite the statement timeout starts again after each
    /// batch of this many rows. Either way the time a stream waits for its client is never
    /// counted against the timeout (see docs/configuration.md).
    public var fetchSize: Int
    /// ``fetchSize`` unless configured.
    public static let defaultFetchSize = 5_000
    /// Whether PostgreSQL connections may keep state beyond a transaction: named prepared
    /// statements and session settings. False behind a transaction pooler (PgBouncer in
    /// `pool_mode = transaction`): statements are sent unnamed, and the read-only setting, the
    /// statement timeout and the session settings are applied per transaction (`SET LOCAL`).
    /// Costs round trips (single-row responses no longer run event-driven); see
    /// docs/scaling.md. SQLite ignores it.
    public var preparedStatements: Bool
    /// How dates and timestamps are written.
    public var dateFormat: DateFormat
    /// The statement timeout every pooled connection has between leases (nil: none). A lease
    /// that needs another one sets its own, and the pool restores this one on release; a lease
    /// that asks for this value costs no round trip.
    public var statementTimeout: Duration?
    /// Connections of each pool that streamed responses may not take: they stay for requests
    /// answered whole (objects, pages, writes), so an export storm cannot starve the API.
    /// Streams may hold ``streamConnectionLimit`` connections of a pool at once.
    public var streamReserve: Int
    /// How long a streamed response waits for a connection (usually for its turn among
    /// streams) before ``DatabaseError/Code/poolExhausted``: longer than ``acquireTimeout``,
    /// since an export can wait while the streams before it finish at the database's speed.
    public var streamAcquireTimeout: Duration

    /// How many connections of one pool streams may hold at once: the pool less
    /// ``streamReserve``, but at least one.
    public var streamConnectionLimit: Int { max(1, self.maximumConnections - self.streamReserve) }
    /// The name PostgreSQL connections give the server (`application_name`: in
    /// `pg_stat_activity`, `%a` of `log_line_prefix`); nil for the driver's default,
    /// `spout@HOST/PID`. An `application_name` in the database URL (or `PGAPPNAME`) wins.
    /// SQLite ignores it.
    public var applicationName: String?
    /// PostgreSQL: how long past the statement timeout in effect Spout waits for the server's
    /// answer before it takes the server as gone (stopped, frozen, cut off by the network),
    /// shuts the connection and fails the work with ``DatabaseError/Code/notAnswering``; 0 for
    /// no limit. Statements without a statement timeout have none either. SQLite ignores it.
    public var answerGraceMilliseconds: Int
    /// PostgreSQL: how many connections, besides the pool's, carry the whole reads of many
    /// requests at once (``SharedReaders``): read-only responses read whole (objects, values,
    /// pages) pipeline their statements on them behind other requests', each in a
    /// transaction of its own, instead of leasing a connection each. 0 turns sharing off.
    /// Connections without session state (``preparedStatements`` false) are never shared.
    /// SQLite ignores it.
    public var sharedReaders: Int

    public init(
        maximumConnections: Int = 8,
        acquireTimeout: Duration = .seconds(5),
        attachmentBatchSize: Int = 500,
        fetchSize: Int = DatabaseConfiguration.defaultFetchSize,
        preparedStatements: Bool = true,
        dateFormat: DateFormat = .epochMilliseconds,
        statementTimeout: Duration? = nil,
        streamReserve: Int = 2,
        streamAcquireTimeout: Duration = .seconds(30),
        applicationName: String? = nil,
        answerGraceMilliseconds: Int = 0,
        sharedReaders: Int = 2
    ) {
        self.sharedReaders = max(0, sharedReaders)
        self.answerGraceMilliseconds = max(0, answerGraceMilliseconds)
        self.streamAcquireTimeout = streamAcquireTimeout
        self.streamReserve = max(0, streamReserve)
        self.preparedStatements = preparedStatements
        self.maximumConnections = max(1, maximumConnections)
        self.acquireTimeout = acquireTimeout
        self.attachmentBatchSize = max(1, attachmentBatchSize)
        self.fetchSize = max(1, fetchSize)
        self.dateFormat = dateFormat
        self.statementTimeout = statementTimeout
        self.applicationName = applicationName
    }

    /// ``statementTimeout`` in whole milliseconds (at least 1), as connections take it.
    var statementTimeoutMilliseconds: Int? {
        self.statementTimeout?.statementTimeoutMilliseconds
    }
}

/// How dates and timestamps appear in the output.
public enum DateFormat: String, Sendable, Hashable, CaseIterable {
    /// Milliseconds since the epoch; a DATE is its day at 00:00 UTC (HTTP-RPC's convention).
    case epochMilliseconds = "epoch-ms"
    /// ISO-8601 strings: `2024-05-01` for dates, `2024-05-01T12:00:00.000Z` for timestamps.
    case iso8601 = "iso-8601"
}
