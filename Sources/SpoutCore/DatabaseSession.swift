import Synchronization

/// One leased connection, lent to the body of ``Database/withSession(_:observer:retryOnPrimary:_:)``
/// and valid only while that body runs.
///
/// Contract:
/// - ``run(_:)`` runs blocking calls on the connection, on the leasing database's threads,
///   one at a time, each inside the work's rules (statement timeout, transaction, role and
///   claims: ``DatabaseConnection/runRequest(statementTimeout:transaction:session:_:)``).
/// - ``cancel()`` (any thread) cancels what runs now and fails what runs later; the calling
///   task's cancellation does the same for a ``run(_:)`` in progress, unless the work says
///   otherwise (``DatabaseWork/cancelsWithTask``).
/// - The session never releases its lease itself: the call that made it does, once.
/// - Its observer hears of a statement timeout in ``run(_:)`` or ``readWhole(_:shape:format:roundTrips:)``.
public final class DatabaseSession: Sendable {
    let lease: ConnectionLease
    /// The work as asked for, with `onReplica` true only when a replica's connection was lent.
    public let work: DatabaseWork
    /// The configuration of the database the work was asked of (a replica's lease still
    /// encodes as the primary says).
    public let configuration: DatabaseConfiguration
    private let observer: (any DatabaseObserver)?
    private let flags = Mutex(Flags())

    private struct Flags {
        var cancelled = false
        var ranOnThread = false
    }

    init(
        lease: ConnectionLease, work: DatabaseWork, onReplica: Bool, configuration: DatabaseConfiguration, observer: (any DatabaseObserver)?
    ) {
        self.lease = lease
        var work = work
        work.onReplica = onReplica
        self.work = work
        self.configuration = configuration
        self.observer = observer
    }

    /// The database the connection belongs to (``Database/name``): `primary`, `replica 1`.
    public var databaseName: String { self.lease.databaseName }

    /// Runs `body` with the connection on one of the database's threads, under the work's
    /// rules, and returns what it returns. Throws what `body` throws, or
    /// ``DatabaseError/Code/cancelled`` after ``cancel()``, or
    /// ``DatabaseError/Code/connectionFailed`` when the database has been closed.
    public func run<T: Sendable>(_ body: @escaping @Sendable (any DatabaseConnection) throws -> T) async throws -> T {
        self.flags.withLock { $0.ranOnThread = true }
        let lease = self.lease
        let work = self.work
        let run = {
            try await lease.threads.run {
                try lease.withConnection { connection in
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
    /// attachment window and fetch size of ``configuration``: the driver's own way when the
    /// connection has one for it and is ready as the work asks (``WholeReadingConnection``:
    /// PostgreSQL on Linux, without a thread; the work's role and claims, its transaction left
    /// implicit), else through ``run(_:)``. Cancelling the task cancels the statement.
    public func readWhole(_ stream: RowStream, shape: ResultShape, format: OutputFormat, roundTrips: RoundTripLog? = nil) async throws -> WholeRead {
        let started = ContinuousClock.now
        let configuration = self.configuration
        if let reader = self.lease.readerWithoutThread(statementTimeout: self.work.statementTimeout?.statementTimeoutMilliseconds) {
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
        let (body, outcome) = try await self.run { connection in
            let body = CollectingSink()
            let outcome = try stream.run(as: format, shape: shape, to: body, on: connection, configuration: configuration)
            return (body.bytes, outcome)
        }
        return WholeRead(body: body, outcome: outcome, database: ContinuousClock.now - started, encode: nil)
    }

    /// Cancels the statement running on the connection, if any, and fails later statements
    /// (``ConnectionLease/cancel()``). Never blocks. The observer hears of it once.
    public func cancel() {
        let first = self.flags.withLock { flags in
            defer { flags.cancelled = true }
            return !flags.cancelled
        }
        if first { self.observer?.statementCancelled() }
        self.lease.cancel()
    }

    /// Whether `error`, thrown by work on this session, means its replica is gone, so that the
    /// same work would run on the primary (``ReadReplicas/meansServerGone(_:)``).
    public func failsOver(_ error: any Error) -> Bool {
        self.work.onReplica && ReadReplicas.meansServerGone(error)
    }

    /// Gives the lease back: on the calling task when nothing needs a round trip (only
    /// reads without a thread, which leave the connection clean), else on the database's threads
    /// (a reset may roll back or close), or inline when those are shut down.
    func end() async {
        let ranOnThread = self.flags.withLock { $0.ranOnThread }
        let lease = self.lease
        if !ranOnThread, lease.readerWithoutThread(statementTimeout: nil) != nil || !lease.hasConnection {
            lease.release()
            return
        }
        if (try? await lease.threads.run({ lease.release() })) == nil { lease.release() }
    }
}
