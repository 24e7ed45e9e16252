/// What a piece of database work asks of ``Database/withSession(_:observer:retryOnPrimary:_:)``:
/// the kind of connection, and the rules its statements run under.
public struct DatabaseWork: Sendable, Hashable {
    /// Statements outside explicit transactions cannot write (a read-only lease).
    public var readOnly: Bool
    /// A read replica may answer (read-only work only; see ``ReadReplicas``).
    public var onReplica: Bool
    /// A streamed response: the lease counts against the pool's stream limit
    /// (``DatabaseConfiguration/streamConnectionLimit``) and may wait
    /// ``DatabaseConfiguration/streamAcquireTimeout`` for a turn.
    public var isStream: Bool
    /// Set on the connection before the statements run, for this work only; nil keeps the
    /// pool's.
    public var statementTimeout: Duration?
    /// The transaction the statements run in (``RequestTransaction``).
    public var transaction: RequestTransaction
    /// Who the statements run as (role and claims), for this work's transaction only.
    public var session: RequestSession?
    /// Whether cancelling the calling task cancels the running statement
    /// (``DatabaseSession/run(_:)``). False for writes: a write whose client went away still
    /// commits or rolls back as a whole, the same as if the client had stayed.
    public var cancelsWithTask: Bool

    public init(
        readOnly: Bool, onReplica: Bool = false, isStream: Bool = false, statementTimeout: Duration? = nil,
        transaction: RequestTransaction = .none, session: RequestSession? = nil, cancelsWithTask: Bool = true
    ) {
        self.cancelsWithTask = cancelsWithTask
        self.readOnly = readOnly
        self.onReplica = onReplica && readOnly
        self.isStream = isStream
        self.statementTimeout = statementTimeout
        self.transaction = transaction
        self.session = session
    }
}

/// Hears what ``Database/withSession(_:observer:retryOnPrimary:_:)`` does with the pool, for
/// metrics and logs (the HTTP layer's per-request observer, say). Called on whatever thread or
/// task the work is on; keep it cheap.
public protocol DatabaseObserver: Sendable {
    /// A connection of `database` (``Database/name``: `primary`, `replica 1`) was leased after
    /// waiting `wait`.
    func connectionAcquired(database: String, after wait: Duration)
    /// The work's running statement is being cancelled (task cancelled, client gone); once per
    /// session at most.
    func statementCancelled()
}
