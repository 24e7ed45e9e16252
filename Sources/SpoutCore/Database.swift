import Synchronization

/// A database reached through a driver: pooled connections, shared counters and the encoding
/// options. The entry point of Spout's core.
///
/// ```swift
/// let database = Database(driver: try SQLiteDriver(url: "sqlite:data/spout.sqlite"))
/// var employee = try database.query("""
///     SELECT emp_no AS "employeeNumber", first_name AS "firstName" FROM employees
///     WHERE emp_no = :employeeNumber
///     """, ["employeeNumber": 10004])
/// employee.attach("titles", "SELECT title FROM titles WHERE emp_no = :employeeNumber")
/// try employee.write(as: .json(), shape: .object, to: sink)
/// ```
///
/// On SQLite, read-only work uses read-only connections from their own pool, and writes share
/// a single read-write connection (SQLite allows one writer at a time anyway).
///
/// A server runs every piece of database work through one call,
/// ``withSession(_:observer:retryOnPrimary:_:)``: it leases, runs the blocking calls on this
/// database's own threads, applies the statement timeout and transaction rules, cancels on
/// task cancellation, moves read-only work off a failed replica, and releases exactly once.
public final class Database: Sendable {
    public let driver: any DatabaseDriver
    public let configuration: DatabaseConfiguration
    /// Statements run by every connection of this database.
    public let statistics = QueryStatistics()
    private let readPool: ConnectionPool
    private let writePool: ConnectionPool
    /// Replicas that may serve read-only work instead of this database (see
    /// ``DatabaseWork/onReplica``); nil when there are none.
    public let replicas: ReadReplicas?

    /// A name for metrics and logs: `primary`, or a read replica's (`replica 1`).
    public let name: String
    /// Hears all work on this database (``withSession(_:observer:retryOnPrimary:_:)``) besides
    /// each call's own observer: the server's metrics; nil: none.
    public let observer: (any DatabaseObserver)?
    /// Where this database's blocking work runs: as many threads as it has connections, plus
    /// one (releases and readiness checks never wait behind a stream).
    let threads: DatabaseThreads
    /// The connections read-only whole reads share (``DatabaseConfiguration/sharedReaders``);
    /// nil when the driver cannot share or sharing is off.
    public let sharedReaders: SharedReaders?

    /// - Parameter clock: what the pools' deadlines go by; a test's own clock makes waits and
    ///   timeouts testable without real time passing.
    public init(
        driver: any DatabaseDriver, configuration: DatabaseConfiguration = DatabaseConfiguration(), replicas: ReadReplicas? = nil,
        name: String = "primary", observer: (any DatabaseObserver)? = nil, clock: any DatabaseClock = SystemDatabaseClock()
    ) {
        self.driver = driver
        self.name = name
        self.observer = observer
        self.configuration = configuration
        self.replicas = replicas.flatMap { $0.replicas.isEmpty ? nil : $0 }
        let connections = configuration.maximumConnections + (driver.hasReadOnlyConnections ? 1 : 0)
        let threads = DatabaseThreads(maximum: connections + 1, name: name)
        self.threads = threads
        self.writePool = ConnectionPool(
            driver: driver,
            readOnly: false,
            maximumConnections: driver.hasReadOnlyConnections ? 1 : configuration.maximumConnections,
            acquireTimeout: configuration.acquireTimeout,
            statementTimeout: configuration.statementTimeoutMilliseconds,
            statistics: self.statistics,
            name: name,
            streamLimit: configuration.streamConnectionLimit,
            streamAcquireTimeout: max(configuration.acquireTimeout, configuration.streamAcquireTimeout),
            clock: clock, threads: threads, observer: observer
        )
        self.readPool = driver.hasReadOnlyConnections
            ? ConnectionPool(
                driver: driver,
                readOnly: true,
                maximumConnections: configuration.maximumConnections,
                acquireTimeout: configuration.acquireTimeout,
                statementTimeout: configuration.statementTimeoutMilliseconds,
                statistics: self.statistics,
                name: name,
                streamLimit: configuration.streamConnectionLimit,
                streamAcquireTimeout: max(configuration.acquireTimeout, configuration.streamAcquireTimeout),
                clock: clock, threads: threads, observer: observer
            )
            : self.writePool
        if configuration.sharedReaders > 0, configuration.preparedStatements, let sharing = driver as? any SharedReadingDriver {
            self.sharedReaders = SharedReaders(
                driver: sharing, count: configuration.sharedReaders, statementTimeout: configuration.statementTimeoutMilliseconds ?? 0,
                statistics: self.statistics, threads: threads)
        } else {
            self.sharedReaders = nil
        }
    }

    public var dialect: SQLDialect { self.driver.dialect }

    /// Leases a connection, waiting asynchronously (no thread blocked) at most the acquire
    /// timeout, then throwing ``DatabaseError/Code/poolExhausted``. Honors task cancellation.
    /// A lease `forStream` (a streamed response) waits while streams hold
    /// ``DatabaseConfiguration/streamConnectionLimit`` connections of the pool.
    public func lease(readOnly: Bool, forStream: Bool = false) async throws -> ConnectionLease {
        try await (readOnly ? self.readPool : self.writePool).lease(readOnly: readOnly, forStream: forStream)
    }

    /// A lease when the pool has a connection slot free now, nil otherwise; never waits. For
    /// tests that hold connections to see what a full pool does.
    public func leaseIfFree(readOnly: Bool) throws -> ConnectionLease? {
        try (readOnly ? self.readPool : self.writePool).leaseIfFree(readOnly: readOnly)
    }

    /// Runs `body` with a leased connection on the database's threads and releases it: for
    /// tools, start-up work and tests. No rule but `readOnly` applies (no statement timeout,
    /// transaction, role or claims); requests use ``withSession(_:observer:retryOnPrimary:_:)``
    /// with their work's rules. Waits for a connection without blocking a thread.
    public func run<T: Sendable>(readOnly: Bool, _ body: @escaping @Sendable (any DatabaseConnection) throws -> T) async throws -> T {
        try await self.withSession(DatabaseWork(readOnly: readOnly)) { session in
            try await session.run(body)
        }
    }

    /// A row stream for `sql` with named `arguments`; nothing runs until it is written.
    /// Throws ``SQLSyntaxError`` when the SQL cannot be parsed.
    public func query(_ sql: String, _ arguments: [String: SQLValue] = [:]) throws -> RowStream {
        RowStream(try ParsedSQL.cached(sql, dialect: self.dialect), arguments, database: self)
    }

    /// A row stream for a statement parsed beforehand (for this database's dialect).
    public func query(_ sql: ParsedSQL, _ arguments: [String: SQLValue] = [:]) -> RowStream {
        RowStream(sql, arguments, database: self)
    }

    /// The server this database's newest connection reached, as `host:port`
    /// (``DatabaseConnection/serverAddress``): with a multi-host URL, the one that is the
    /// primary now. Nil before the first connection, and for SQLite.
    public var server: String? { self.writePool.server ?? self.readPool.server }

    /// Connections currently open or leased, per pool (for tests and metrics).
    public var connectionsInUse: (read: Int, write: Int) {
        (self.readPool.slotsInUse, self.readPool === self.writePool ? 0 : self.writePool.slotsInUse)
    }

    /// What the pools hold now, over both pools (for metrics).
    public var poolState: PoolState {
        let pools = self.readPool === self.writePool ? [self.readPool] : [self.readPool, self.writePool]
        var state = PoolState()
        for pool in pools {
            let (slots, idle, waiters) = pool.counts
            state.open += slots
            state.idle += idle
            state.inUse += slots - idle
            state.waiters += waiters
        }
        return state
    }

    /// Lease requests waiting for a free connection, over both pools (for tests and metrics).
    public var leasesWaiting: Int {
        self.readPool.waiterCount + (self.readPool === self.writePool ? 0 : self.writePool.waiterCount)
    }

    /// A database nobody holds any more lets its threads end and closes its shared
    /// connections (``close()`` does too): the driver's I/O thread would otherwise keep them.
    deinit {
        self.sharedReaders?.close()
        self.threads.shutdown()
    }

    /// Closes idle connections now and leased ones as they are released; work already queued
    /// on the database's threads still runs, new work is refused.
    public func close() {
        self.replicas?.close()
        self.sharedReaders?.close()
        self.readPool.close()
        if self.readPool !== self.writePool { self.writePool.close() }
        self.threads.shutdown()
    }

    /// Returns once this database and its replicas are closed and nothing of theirs runs.
    private func ended() async {
        for replica in self.replicas?.replicas ?? [] {
            await replica.database.ended()
        }
        await self.sharedReaders?.closed()
        await self.threads.ended()
    }

    /// After ``close()``: returns once nothing of the database runs any more (its threads have
    /// run the work queued before the close and ended, its shared connections are closed), or
    /// after `limit`, whichever comes first; false when `limit` passed first. A process
    /// awaits it before it exits: a connection still being opened (a password hashed by the
    /// TLS library, say) would otherwise race the process's exit handlers.
    public func closed(within limit: Duration) async -> Bool {
        await withCheckedContinuation { continuation in
            let outcome = FirstOutcome(continuation)
            Task {
                await self.ended()
                outcome.resume(returning: true)
            }
            Task {
                try? await Task.sleep(for: limit)
                outcome.resume(returning: false)
            }
        }
    }
}

/// Connections of a ``Database``'s pools at one moment.
public struct PoolState: Sendable, Hashable {
    /// Open or being opened: leased plus idle.
    public var open = 0
    public var inUse = 0
    public var idle = 0
    /// Lease requests waiting for a connection.
    public var waiters = 0
}

/// A continuation resumed by the first of several racing tasks; the others' outcomes are
/// dropped.
private final class FirstOutcome<Value: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<Value, Never>?>

    init(_ continuation: CheckedContinuation<Value, Never>) {
        self.continuation = Mutex(continuation)
    }

    func resume(returning value: Value) {
        self.continuation.withLock { $0.take() }?.resume(returning: value)
    }
}
