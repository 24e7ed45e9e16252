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

/// Hears what ``Database/withSession(_:observer:retryOnPrimary:_:)`` does with the pool and
/// the statements, for metrics and logs: a database's own observer (``Database/observer``,
/// the server's metrics) hears all of its work, a call's observer that call's. Called on
/// whatever thread or task the work is on; keep it cheap. Every method but
/// ``connectionAcquired(database:after:)`` does nothing by default.
public protocol DatabaseObserver: Sendable {
    /// A connection of `database` (``Database/name``: `primary`, `replica 1`) was leased after
    /// waiting `wait`.
    func connectionAcquired(database: String, after wait: Duration)
    /// No connection of `database` became free within the acquire timeout
    /// (``DatabaseError/Code/poolExhausted``).
    func acquireTimedOut(database: String)
    /// The lease of `database` was given back after `held`, for `work`.
    func connectionReleased(database: String, after held: Duration, work: DatabaseWork)
    /// The work's running statement is being cancelled (task cancelled, client gone); once per
    /// session at most.
    func statementCancelled()
    /// A statement of the work ran past its timeout (``DatabaseError/Code/statementTimeout``).
    func statementTimedOut()
    /// The server of `database` did not answer within the statement timeout and the grace
    /// period; its connection was shut (``DatabaseError/Code/notAnswering``).
    func serverNotAnswering(database: String)
    /// A new connection of `database` reached `server` (``DatabaseConnection/serverAddress``),
    /// another server than the pool's connections reached before (`previous`): a failover or a
    /// switchover moved the database. Connections to the previous server are closed as they
    /// come back to the pool (``ConnectionPool``). Heard by the database's own observer only.
    func serverChanged(database: String, from previous: String, to server: String)
}

extension DatabaseObserver {
    public func acquireTimedOut(database: String) {}
    public func connectionReleased(database: String, after held: Duration, work: DatabaseWork) {}
    public func statementCancelled() {}
    public func statementTimedOut() {}
    public func serverNotAnswering(database: String) {}
    public func serverChanged(database: String, from previous: String, to server: String) {}
}

/// Two observers heard as one: a database's own and a call's, or the server's metrics and its
/// log.
public struct ObserverPair: DatabaseObserver {
    let first: any DatabaseObserver
    let second: any DatabaseObserver

    /// Both when both are there, else whichever is.
    public static func combining(_ first: (any DatabaseObserver)?, _ second: (any DatabaseObserver)?) -> (any DatabaseObserver)? {
        guard let first else { return second }
        guard let second else { return first }
        return ObserverPair(first: first, second: second)
    }

    public func connectionAcquired(database: String, after wait: Duration) {
        self.first.connectionAcquired(database: database, after: wait)
        self.second.connectionAcquired(database: database, after: wait)
    }

    public func acquireTimedOut(database: String) {
        self.first.acquireTimedOut(database: database)
        self.second.acquireTimedOut(database: database)
    }

    public func connectionReleased(database: String, after held: Duration, work: DatabaseWork) {
        self.first.connectionReleased(database: database, after: held, work: work)
        self.second.connectionReleased(database: database, after: held, work: work)
    }

    public func statementCancelled() {
        self.first.statementCancelled()
        self.second.statementCancelled()
    }

    public func statementTimedOut() {
        self.first.statementTimedOut()
        self.second.statementTimedOut()
    }

    public func serverNotAnswering(database: String) {
        self.first.serverNotAnswering(database: database)
        self.second.serverNotAnswering(database: database)
    }

    public func serverChanged(database: String, from previous: String, to server: String) {
        self.first.serverChanged(database: database, from: previous, to: server)
        self.second.serverChanged(database: database, from: previous, to: server)
    }
}
