/// How live notices run (docs/endpoints.md, Live notices; the configuration's
/// `server.heartbeatSeconds`, `server.limits.maxSubscribers`,
/// `server.limits.maxSubscribersPerAddress` and `database.changePollMs`).
public struct LiveNoticeSettings: Sendable, Hashable {
    /// How often the change log's position is read while anyone subscribes.
    public var pollInterval: Duration = .milliseconds(250)
    /// How long an event stream may go without a byte before a `: heartbeat` comment.
    public var heartbeat: Duration = .seconds(15)
    /// Event streams open at once, in all (beyond: 503) and per client address (beyond: 429).
    public var maximumSubscribers = 10_000
    public var maximumSubscribersPerAddress = 64
    /// How long a subscriber may leave a notice unread (its connection takes nothing) before
    /// it is dropped: its client then reconnects with `Last-Event-ID` and loses nothing.
    public var slowSubscriberLimit: Duration = .seconds(60)
    /// The most result keys a group remembers to decide without a query whether a change is
    /// its own; a larger result is told of every change to its tables.
    public var keysPerGroup = 10_000
    /// Group evaluations of one change batch that run at once, each on a connection of its own.
    public var concurrentEvaluations = 2
    /// Evaluations of groups with the same role and claims sent together, in one round trip
    /// on PostgreSQL.
    public var evaluationsPerRoundTrip = 256
    /// Evaluations of groups of one endpoint (and one role and claims) asked in one statement,
    /// a `UNION ALL` of their key statements (SQLite allows at most 500 terms in one).
    public var evaluationsPerStatement = 128

    public init() {}
}
