import Synchronization

/// One piece of work's access to its database, lent to the body of
/// ``Database/withSession(_:observer:retryOnPrimary:_:)`` and valid only while that body runs:
/// a leased connection, or, for read-only work that may share (``Database/sharedReaders``),
/// a lease taken only when something needs one.
///
/// Contract:
/// - ``run(_:)`` runs blocking calls on the connection, on the leasing database's threads,
///   one at a time, each inside the work's rules (statement timeout, transaction, role and
///   claims: ``DatabaseConnection/runRequest(statementTimeout:transaction:session:_:)``);
///   ``runLast(_:)`` the same, then releases the lease on that thread.
/// - ``readWhole(_:shape:format:roundTrips:)`` on a session that has not leased yet reads on a
///   shared connection when one is lent (``SharedReaders/reader(statementTimeout:format:)``), and
///   leases only otherwise; it is the session's last work, as ``runLast(_:)`` is.
/// - ``cancel()`` (any thread) cancels what runs now and fails what runs later; the calling
///   task's cancellation does the same for a ``run(_:)`` in progress, unless the work says
///   otherwise (``DatabaseWork/cancelsWithTask``).
/// - The session never releases its lease itself, but at the end of ``runLast(_:)`` (and of
///   ``readWhole(_:shape:format:roundTrips:)``, which runs through it): the call that made it
///   does, once (``end()``).
/// - Its observer hears how long a lease the session takes waited (or that it timed out) and
///   how long the lease was held, and of a statement timeout in ``run(_:)`` or
///   ``readWhole(_:shape:format:roundTrips:)``.
public final class DatabaseSession: Sendable {
    /// The work as asked for, with `onReplica` true only when a replica's connection was lent.
    public let work: DatabaseWork
    /// The configuration of the database the work was asked of (a replica's lease still
    /// encodes as the primary says).
    public let configuration: DatabaseConfiguration
    /// The database whose pool the session leases from when it needs a connection; nil when
    /// the session was made with its lease (a replica's).
    private let pool: Database?
    private let observer: (any DatabaseObserver)?
    private let state: Mutex<State>

    private struct State {
        var lease: ConnectionLease?
        /// When the lease was taken.
        var acquired: ContinuousClock.Instant?
        var cancelled = false
        var ranOnThread = false
    }

    /// A session on a replica's `lease`, taken by the caller.
    init(lease: ConnectionLease, work: DatabaseWork, configuration: DatabaseConfiguration, observer: (any DatabaseObserver)?) {
        var work = work
        work.onReplica = true
        self.work = work
        self.configuration = configuration
        self.observer = observer
        self.pool = nil
        self.state = Mutex(State(lease: lease, acquired: .now))
    }

    /// A session that leases from `database`'s pool when it first needs a connection
    /// (``leased(waitingSince:)``).
    init(on database: Database, work: DatabaseWork, observer: (any DatabaseObserver)?) {
        var work = work
        work.onReplica = false
        self.work = work
        self.configuration = database.configuration
        self.observer = observer
        self.pool = database
        self.state = Mutex(State())
    }

    /// The database the connection belongs to (``Database/name``): `primary`, `replica 1`.
    public var databaseName: String {
        self.state.withLock { $0.lease?.databaseName } ?? self.pool?.name ?? ""
    }

    /// The session's lease, if it has taken one.
    var lease: ConnectionLease? {
        self.state.withLock { $0.lease }
    }

    /// The session's lease, taken now from its database's pool if it has none yet (a stream's
    /// counting against the stream limit). The observer hears how long that waited (since
    /// `waitingSince`) or that it timed out. Throws what leasing throws:
    /// ``DatabaseError/Code/poolExhausted`` after the acquire timeout,
    /// ``DatabaseError/Code/cancelled`` when the task is cancelled while waiting.
    func leased(waitingSince asked: ContinuousClock.Instant = .now) async throws -> ConnectionLease {
        if let lease = self.lease { return lease }
        guard let database = self.pool else { throw DatabaseError(.unsupported, message: "a session without a lease") }
        let lease: ConnectionLease
        do {
            lease = try await database.lease(readOnly: self.work.readOnly, forStream: self.work.isStream)
        } catch let error as DatabaseError where error.code == .poolExhausted {
            self.observer?.acquireTimedOut(database: database.name)
            throw error
        }
        let now = ContinuousClock.now
        self.observer?.connectionAcquired(database: lease.databaseName, after: now - asked)
        let cancelled = self.state.withLock { state in
            state.lease = lease
            state.acquired = now
            return state.cancelled
        }
        if cancelled { lease.cancel() }
        return lease
    }

    /// Runs `body` with the connection on one of the database's threads, under the work's
    /// rules, and returns what it returns. Throws what `body` throws, or
    /// ``DatabaseError/Code/cancelled`` after ``cancel()``, or
    /// ``DatabaseError/Code/connectionFailed`` when the database has been closed.
    public func run<T: Sendable>(_ body: @escaping @Sendable (any DatabaseConnection) throws -> T) async throws -> T {
        try await self.run(body, releasing: false)
    }

    /// Runs `body` as ``run(_:)`` does, then gives the lease back on the same thread in the same
    /// hop, whatever `body` did: for work whose last blocking call this is, so that ``end()``
    /// needs no hop of its own. Later calls that need the connection throw (the lease is
    /// released); ``end()`` still reports how long it was held.
    public func runLast<T: Sendable>(_ body: @escaping @Sendable (any DatabaseConnection) throws -> T) async throws -> T {
        try await self.run(body, releasing: true)
    }

    private func run<T: Sendable>(_ body: @escaping @Sendable (any DatabaseConnection) throws -> T, releasing: Bool) async throws -> T {
        let lease = try await self.leased()
        self.state.withLock { $0.ranOnThread = true }
        let work = self.work
        let run = {
            try await lease.threads.run {
                defer { if releasing { lease.release() } }
                return try lease.withConnection { connection in
                    try connection.runRequest(statementTimeout: work.statementTimeout, transaction: work.transaction, session: work.session) {
                        try body(connection)
                    }
                }
            }
        }
        return try await self.noticingTimeouts {
            guard work.cancelsWithTask else { return try await run() }
            return try await withTaskCancellationHandler(operation: run, onCancel: { self.cancel() })
        }
    }

    /// Runs `body`; tells the observer when it throws ``DatabaseError/Code/statementTimeout``
    /// or ``DatabaseError/Code/notAnswering``.
    private func noticingTimeouts<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as DatabaseError where error.code == .statementTimeout {
            self.observer?.statementTimedOut()
            throw error
        } catch let error as DatabaseError where error.code == .notAnswering {
            self.observer?.serverNotAnswering(database: self.databaseName)
            throw error
        }
    }

    /// Reads `stream` whole into memory, encoded in `format` and `shape`, with the date format,
    /// attachment window and fetch size of ``configuration``: on a shared connection when the
    /// session has not leased and one is lent (``SharedReadingConnection``; cancelling the task
    /// drops the answer, the statement finishes), else the driver's own way when the leased
    /// connection has one for it and is ready as the work asks (``WholeReadingConnection``:
    /// PostgreSQL on Linux, without a thread), else through ``runLast(_:)``; cancelling the task
    /// then cancels the statement. Either way with the work's role and claims, its transaction
    /// left implicit. It is the session's last work: a lease it took is given back (on the
    /// database's thread, in the same hop, when it ran there), and later calls that need the
    /// connection throw.
    public func readWhole(_ stream: RowStream, shape: ResultShape, format: OutputFormat, roundTrips: RoundTripLog? = nil) async throws -> WholeRead {
        let started = ContinuousClock.now
        let configuration = self.configuration
        let timeout = self.work.statementTimeout?.statementTimeoutMilliseconds
        if let shared = self.sharedReader(statementTimeout: timeout, format: format) {
            roundTrips?.markShared()
            let session = self.work.session
            // A cancelled task ends the read at once (the shared connection's contract); no
            // statement is cancelled, so none is counted as such.
            let read = try await self.noticingTimeouts {
                try await shared.readWhole(
                    stream, shape: shape, format: format, dateFormat: configuration.dateFormat, session: session, roundTrips: roundTrips)
            }
            if let read { return read }
        }
        let lease = try await self.leased()
        if let reader = lease.readerWithoutThread(statementTimeout: timeout) {
            let session = self.work.session
            let read = try await self.noticingTimeouts {
                try await withTaskCancellationHandler {
                    try await reader.readWhole(
                        stream, shape: shape, format: format, dateFormat: configuration.dateFormat, session: session, roundTrips: roundTrips)
                } onCancel: {
                    self.cancel()
                }
            }
            if let read { return read }
        }
        let (body, outcome) = try await self.runLast { connection in
            let body = CollectingSink()
            let outcome = try stream.run(as: format, shape: shape, to: body, on: connection, configuration: configuration)
            return (body.bytes, outcome)
        }
        return WholeRead(body: body, outcome: outcome, database: ContinuousClock.now - started, encode: nil)
    }

    /// A shared connection for a read now, when the session has not leased, its work may
    /// share (read-only, no explicit transaction, not a stream) and one is lent for it.
    private func sharedReader(statementTimeout: Int?, format: OutputFormat) -> (any SharedReadingConnection)? {
        guard let shared = self.pool?.sharedReaders, self.state.withLock({ $0.lease == nil && !$0.cancelled }) else { return nil }
        return shared.reader(statementTimeout: statementTimeout, format: format)
    }

    /// Cancels the statement running on the connection, if any, and fails later statements
    /// (``ConnectionLease/cancel()``). Never blocks. The observer hears of it once.
    public func cancel() {
        let (first, lease) = self.state.withLock { state in
            defer { state.cancelled = true }
            return (!state.cancelled, state.lease)
        }
        if first { self.observer?.statementCancelled() }
        lease?.cancel()
    }

    /// Whether `error`, thrown by work on this session, means its replica is gone, so that the
    /// same work would run on the primary (``ReadReplicas/meansServerGone(_:)``).
    public func failsOver(_ error: any Error) -> Bool {
        self.work.onReplica && ReadReplicas.meansServerGone(error)
    }

    /// Gives the lease back, if the session has one and ``runLast(_:)`` has not given it back:
    /// on the calling task when nothing needs a round trip (only reads without a thread, which
    /// leave the connection clean), else on the database's threads (a reset may roll back or
    /// close), or inline when those are shut down. Then the observer hears how long it was held.
    func end() async {
        let (ranOnThread, held, acquired) = self.state.withLock { ($0.ranOnThread, $0.lease, $0.acquired ?? .now) }
        guard let lease = held else { return }
        defer { self.observer?.connectionReleased(database: lease.databaseName, after: ContinuousClock.now - acquired, work: self.work) }
        // Released already (``runLast(_:)``).
        if lease.isReleased { return }
        if !ranOnThread, lease.readerWithoutThread(statementTimeout: nil) != nil || !lease.hasConnection {
            lease.release()
            return
        }
        if (try? await lease.threads.run({ lease.release() })) == nil { lease.release() }
    }
}
