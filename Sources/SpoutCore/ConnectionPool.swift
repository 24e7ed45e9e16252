import Synchronization

/// A bounded pool of connections from one driver.
///
/// Contract:
/// - At most `maximumConnections` connections are leased or idle at once. Connections are
///   opened lazily, on the thread of the lease holder (``ConnectionLease/withConnection(_:)``),
///   never on the thread that waits for a lease.
/// - A caller that finds every connection leased waits, without blocking a thread, until one is
///   released or `acquireTimeout` passes; then it gets ``DatabaseError/Code/poolExhausted``.
///   Waiters are served first come, first served, except that a stream's lease
///   (`forStream`) is granted only while fewer than `streamLimit` streams hold connections:
///   the rest of the pool stays for requests answered whole, and a waiting stream lets later
///   short requests go first.
/// - A released connection is reset (``DatabaseConnection/reset()``); a broken one, or one
///   that cannot be reset, is closed and its slot freed, so the next lease opens a new one.
/// - A broken connection is taken as news about its server (gone, restarted, demoted to a
///   standby: ``DatabaseError/Code/connectionLost``, ``DatabaseError/Code/serverReadOnly``),
///   not about that connection alone: every connection opened before it broke is retired. The
///   idle ones are closed at once, the leased ones when they come back, so none is lent again
///   and the next leases open connections where the URL leads now. The same happens when a new
///   connection reaches another server (``DatabaseConnection/serverAddress``) than the last one
///   did: `observer` hears of it (``DatabaseObserver/serverChanged(database:from:to:)``).
/// - Deadlines and repeated cancel requests go by `clock` (``DatabaseClock``); leases run
///   their blocking work on `threads`, the owning ``Database``'s.
final class ConnectionPool: Sendable {
    private struct Waiter {
        var id: UInt64
        var readOnly: Bool
        var forStream: Bool
        /// When its wait ends (``DatabaseClock/now``): ``acquireTimeout(forStream:)`` after it began.
        var deadline: Duration
        var resume: @Sendable (Result<ConnectionLease, DatabaseError>) -> Void
    }

    private struct State {
        var idle: [any DatabaseConnection] = []
        /// Leased plus idle connections, and leases whose connection is not open yet.
        var slotsInUse = 0
        var waiters: [Waiter] = []
        var nextWaiterID: UInt64 = 0
        var isClosed = false
        /// Leases held by streams.
        var streamLeases = 0
        /// The one live expiry timer (``expireWaiters(timer:)``): its number and when it fires.
        /// A timer whose number is not this one's was superseded and does nothing.
        var expiryTimer: UInt64 = 0
        var expiryDue: Duration?
        /// Connections opened in an earlier generation than this are retired: closed when idle
        /// or given back.
        var generation: UInt64 = 0
        /// The generation each open connection was opened in.
        var openedIn: [ObjectIdentifier: UInt64] = [:]
        /// The server the newest connection reached (``DatabaseConnection/serverAddress``).
        var server: String?

        /// Starts a new generation, retiring every connection opened up to now; returns the
        /// idle ones, for the caller to close outside the lock.
        mutating func retireConnections() -> [any DatabaseConnection] {
            self.generation += 1
            let retired = self.idle
            self.idle = []
            self.slotsInUse -= retired.count
            for connection in retired { self.openedIn[ObjectIdentifier(connection)] = nil }
            return retired
        }
    }

    let driver: any DatabaseDriver
    let readOnly: Bool
    let maximumConnections: Int
    /// The most leases streams may hold at once (``DatabaseConfiguration/streamConnectionLimit``).
    let streamLimit: Int
    let acquireTimeout: Duration
    /// How long a stream's lease waits (its turn among streams, usually).
    let streamAcquireTimeout: Duration
    /// The statement timeout (ms) every connection has between leases; nil: none.
    let statementTimeout: Int?
    let statistics: QueryStatistics
    /// The name of the database the pool belongs to (``Database/name``).
    let name: String
    let clock: any DatabaseClock
    /// Where leases of this pool run blocking work (the owning ``Database``'s threads).
    let threads: DatabaseThreads
    /// Hears that the pool's connections reached another server (the owning ``Database``'s
    /// observer).
    let observer: (any DatabaseObserver)?
    private let state = Mutex(State())

    init(
        driver: any DatabaseDriver, readOnly: Bool, maximumConnections: Int, acquireTimeout: Duration,
        statementTimeout: Int? = nil, statistics: QueryStatistics, name: String = "primary", streamLimit: Int? = nil,
        streamAcquireTimeout: Duration? = nil, clock: any DatabaseClock = SystemDatabaseClock(), threads: DatabaseThreads,
        observer: (any DatabaseObserver)? = nil
    ) {
        self.observer = observer
        self.clock = clock
        self.threads = threads
        self.streamAcquireTimeout = streamAcquireTimeout ?? acquireTimeout
        self.driver = driver
        self.streamLimit = min(maximumConnections, max(1, streamLimit ?? maximumConnections))
        self.name = name
        self.readOnly = readOnly
        self.maximumConnections = maximumConnections
        self.acquireTimeout = acquireTimeout
        self.statementTimeout = statementTimeout
        self.statistics = statistics
    }

    /// Leases a connection slot, waiting asynchronously up to the acquire timeout. With
    /// `readOnly`, statements outside explicit transactions cannot write
    /// (``DatabaseConnection/setReadOnly(_:)``); `forStream` counts it against ``streamLimit``.
    func lease(readOnly: Bool, forStream: Bool = false) async throws -> ConnectionLease {
        let waiterID = Mutex<UInt64?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ConnectionLease, any Error>) in
                let id = self.lease(readOnly: readOnly, forStream: forStream) { result in continuation.resume(with: result.mapError { $0 }) }
                waiterID.withLock { $0 = id }
            }
        } onCancel: {
            if let id = waiterID.withLock({ $0 }) {
                self.abandon(waiter: id, with: DatabaseError(.cancelled, message: "task cancelled while waiting for a connection"))
            }
        }
    }

    /// A lease when a connection slot is free now, nil when leasing would have to wait. Never
    /// waits nor blocks.
    func leaseIfFree(readOnly: Bool) throws -> ConnectionLease? {
        // `answer` is nil until the pool answers; `decided` once this call has returned: a lease
        // that comes after that (a slot freed while the wait was being withdrawn) goes back.
        let state = Mutex<(answer: Result<ConnectionLease, DatabaseError>?, decided: Bool)>((nil, false))
        let waiter = self.lease(readOnly: readOnly, forStream: false) { result in
            let late = state.withLock { state -> ConnectionLease? in
                guard state.decided else {
                    state.answer = result
                    return nil
                }
                return try? result.get()
            }
            late?.release()
        }
        if let waiter { self.abandon(waiter: waiter, with: DatabaseError(.poolExhausted)) }
        let answer = state.withLock { state in
            state.decided = true
            return state.answer
        }
        switch answer {
        case .success(let lease)?: return lease
        case .failure(let error)? where error.code != .poolExhausted: throw error
        default: return nil
        }
    }

    /// Calls `resume` exactly once with a lease or an error; returns the waiter's id when it had
    /// to wait (for cancellation), nil when it was answered at once.
    private func lease(
        readOnly: Bool, forStream: Bool, _ resume: @escaping @Sendable (Result<ConnectionLease, DatabaseError>) -> Void
    ) -> UInt64? {
        enum Decision {
            case ready(ConnectionLease)
            case failed(DatabaseError)
            case waiting(UInt64, expiry: (timer: UInt64, delay: Duration)?)
        }
        let decision: Decision = self.state.withLock { state in
            if state.isClosed {
                return .failed(DatabaseError(.connectionFailed, message: "the database is closed"))
            }
            if !forStream || state.streamLeases < self.streamLimit {
                if let connection = state.idle.popLast() {
                    if forStream { state.streamLeases += 1 }
                    return .ready(ConnectionLease(pool: self, connection: connection, readOnly: readOnly, forStream: forStream))
                }
                if state.slotsInUse < self.maximumConnections {
                    state.slotsInUse += 1
                    if forStream { state.streamLeases += 1 }
                    return .ready(ConnectionLease(pool: self, connection: nil, readOnly: readOnly, forStream: forStream))
                }
            }
            let timeout = self.acquireTimeout(forStream: forStream)
            let deadline = self.clock.now + timeout
            state.nextWaiterID += 1
            state.waiters.append(Waiter(id: state.nextWaiterID, readOnly: readOnly, forStream: forStream, deadline: deadline, resume: resume))
            // A timer is started only when none will fire by this waiter's deadline.
            if let due = state.expiryDue, due <= deadline {
                return .waiting(state.nextWaiterID, expiry: nil)
            }
            state.expiryTimer += 1
            state.expiryDue = deadline
            return .waiting(state.nextWaiterID, expiry: (state.expiryTimer, timeout))
        }
        switch decision {
        case .ready(let lease):
            resume(.success(lease))
            return nil
        case .failed(let error):
            resume(.failure(error))
            return nil
        case .waiting(let id, let expiry):
            if let expiry {
                self.clock.schedule(after: expiry.delay) { self.expireWaiters(timer: expiry.timer) }
            }
            return id
        }
    }

    /// Fails the waiters whose acquire timeout has passed, then starts a timer for the earliest
    /// deadline left, if any. One timer per pool, not one per waiter: a waiter served in time
    /// (the usual case under load) leaves no timer behind to wake a thread for nothing.
    /// `timer`: the number of the timer calling; a superseded one returns at once.
    private func expireWaiters(timer: UInt64) {
        let now = self.clock.now
        let (expired, next): ([Waiter], (timer: UInt64, delay: Duration)?) = self.state.withLock { state in
            guard state.expiryTimer == timer else { return ([], nil) }
            var expired: [Waiter] = []
            state.waiters.removeAll { waiter in
                guard waiter.deadline <= now else { return false }
                expired.append(waiter)
                return true
            }
            guard let earliest = state.waiters.lazy.map(\.deadline).min() else {
                state.expiryDue = nil
                return (expired, nil)
            }
            state.expiryTimer += 1
            state.expiryDue = earliest
            return (expired, (state.expiryTimer, earliest - now))
        }
        if let next {
            self.clock.schedule(after: next.delay) { self.expireWaiters(timer: next.timer) }
        }
        for waiter in expired {
            let timeout = self.acquireTimeout(forStream: waiter.forStream)
            waiter.resume(.failure(DatabaseError(.poolExhausted, message: "no connection free within \(timeout)")))
        }
    }

    /// How long a lease waits: a stream's its own (its turn among streams), anything else
    /// ``acquireTimeout``.
    private func acquireTimeout(forStream: Bool) -> Duration {
        forStream ? self.streamAcquireTimeout : self.acquireTimeout
    }

    private func abandon(waiter id: UInt64, with error: DatabaseError) {
        let waiter: Waiter? = self.state.withLock { state in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index)
        }
        waiter?.resume(.failure(error))
    }

    /// Takes back a lease's connection (nil when it never opened one or it was discarded);
    /// `fromStream` says whether the lease counted against ``streamLimit``.
    func giveBack(_ connection: (any DatabaseConnection)?, fromStream: Bool) {
        var usable = connection
        let broken = connection?.isBroken ?? false
        if let candidate = usable, broken || !candidate.reset() || !self.restoreStatementTimeout(candidate) {
            candidate.close()
            usable = nil
        }
        var retired: [any DatabaseConnection] = []
        let (waiter, lease): (Waiter?, ConnectionLease?) = self.state.withLock { state in
            if fromStream { state.streamLeases -= 1 }
            if let connection {
                let generation = state.openedIn.removeValue(forKey: ObjectIdentifier(connection))
                // The first connection of its generation to break retires the others.
                if broken, generation == state.generation {
                    retired = state.retireConnections()
                }
                if let candidate = usable, let generation, generation < state.generation {
                    retired.append(candidate)
                    usable = nil
                } else if let candidate = usable, let generation {
                    state.openedIn[ObjectIdentifier(candidate)] = generation
                }
            }
            if state.isClosed {
                state.slotsInUse -= 1
                return (nil, nil)
            }
            // The first waiter that may have it: a stream waits while streams hold their limit.
            if let index = state.waiters.firstIndex(where: { !$0.forStream || state.streamLeases < self.streamLimit }) {
                let waiter = state.waiters.remove(at: index)
                if waiter.forStream { state.streamLeases += 1 }
                return (waiter, ConnectionLease(pool: self, connection: usable, readOnly: waiter.readOnly, forStream: waiter.forStream))
            }
            if let usable {
                state.idle.append(usable)
            } else {
                state.slotsInUse -= 1
            }
            return (nil, nil)
        }
        for connection in retired { connection.close() }
        if let waiter, let lease {
            waiter.resume(.success(lease))
        } else if self.state.withLock({ $0.isClosed }) {
            usable?.close()
        }
    }

    /// Opens a connection for a lease that has none yet.
    /// A new connection with the pool's statement timeout.
    func open() throws -> any DatabaseConnection {
        let connection = try self.driver.connect(readOnly: self.readOnly, statistics: self.statistics)
        do {
            try connection.setStatementTimeout(milliseconds: self.statementTimeout)
        } catch {
            connection.close()
            throw error
        }
        let server = connection.serverAddress
        let (previous, retired) = self.state.withLock { state -> (String?, [any DatabaseConnection]) in
            var previous: String?
            var retired: [any DatabaseConnection] = []
            if let server, let known = state.server, known != server {
                previous = known
                retired = state.retireConnections()
            }
            if let server { state.server = server }
            state.openedIn[ObjectIdentifier(connection)] = state.generation
            return (previous, retired)
        }
        for connection in retired { connection.close() }
        if let previous, let server {
            self.observer?.serverChanged(database: self.name, from: previous, to: server)
        }
        return connection
    }

    /// The server the pool's newest connection reached (``DatabaseConnection/serverAddress``);
    /// nil before the first, or when the driver has no servers.
    var server: String? { self.state.withLock { $0.server } }

    /// Puts the pool's statement timeout back after a lease (nothing to send when the lease
    /// kept it); false when that fails.
    private func restoreStatementTimeout(_ connection: any DatabaseConnection) -> Bool {
        (try? connection.setStatementTimeout(milliseconds: self.statementTimeout)) != nil
    }

    /// Closes idle connections and fails waiters; leased connections close when released.
    func close() {
        let (idle, waiters) = self.state.withLock { state in
            state.isClosed = true
            let idle = state.idle
            let waiters = state.waiters
            state.slotsInUse -= idle.count
            state.idle = []
            state.waiters = []
            return (idle, waiters)
        }
        for connection in idle { connection.close() }
        for waiter in waiters { waiter.resume(.failure(DatabaseError(.connectionFailed, message: "the database is closed"))) }
    }

    /// Connections open or leased right now (for tests and metrics).
    var slotsInUse: Int { self.state.withLock { $0.slotsInUse } }
    var idleCount: Int { self.state.withLock { $0.idle.count } }
    /// Lease requests waiting for a connection.
    var waiterCount: Int { self.state.withLock { $0.waiters.count } }
    /// Slots in use (leased or idle), idle connections and waiters, read together.
    var counts: (slots: Int, idle: Int, waiters: Int) {
        self.state.withLock { ($0.slotsInUse, $0.idle.count, $0.waiters.count) }
    }
}

/// The right to use one pooled connection until ``release()``.
///
/// Contract: ``withConnection(_:)`` blocks (it may open the connection and run statements);
/// call it off any event loop, from one thread at a time. ``cancel()`` may be called from any
/// thread. ``release()`` must be called exactly once when done (later calls do nothing); the
/// connection is reset and returned to the pool.
public final class ConnectionLease: Sendable {
    private struct State {
        var connection: (any DatabaseConnection)?
        var released = false
        var cancelled = false
        /// Cancel requests being sent right now (outside the lock).
        var cancelsInFlight = 0
        /// Released while a cancel request was being sent: the connection goes back to the
        /// pool when the last one is done, never before (it would cancel another lease's work).
        var pendingGiveBack: (any DatabaseConnection)?
        var givenBack = false
    }

    private let pool: ConnectionPool
    private let state: Mutex<State>
    /// Whether statements outside explicit transactions must not write.
    public let readOnly: Bool
    /// Whether the lease counts against the pool's stream limit.
    public let forStream: Bool

    init(pool: ConnectionPool, connection: (any DatabaseConnection)?, readOnly: Bool, forStream: Bool = false) {
        self.pool = pool
        self.state = Mutex(State(connection: connection))
        self.readOnly = readOnly
        self.forStream = forStream
    }

    /// Runs `body` with the leased connection on the calling thread, opening it if needed and
    /// making it read-only or writable as the lease asked.
    public func withConnection<T>(_ body: (any DatabaseConnection) throws -> T) throws -> T {
        let current: (any DatabaseConnection)? = try self.state.withLock { state in
            guard !state.released else { throw DatabaseError(.unsupported, message: "lease used after release") }
            if state.cancelled { throw DatabaseError(.cancelled, message: "lease cancelled") }
            return state.connection
        }
        let connection: any DatabaseConnection
        if let current {
            connection = current
        } else {
            connection = try self.pool.open()
            self.state.withLock { $0.connection = connection }
        }
        try connection.setReadOnly(self.readOnly)
        return try body(connection)
    }

    /// The name of the database whose pool the lease comes from (``Database/name``).
    public var databaseName: String { self.pool.name }

    /// The threads of the database whose pool the lease comes from.
    var threads: DatabaseThreads { self.pool.threads }

    /// Whether ``release()`` was called.
    public var isReleased: Bool {
        self.state.withLock { $0.released }
    }

    /// Whether the lease holds a connection already open (alive or not).
    public var hasConnection: Bool {
        self.state.withLock { !$0.released && $0.connection != nil }
    }

    /// Whether the lease holds a connection already open and, as far as can be told without a
    /// round trip, alive (``DatabaseConnection/isAlive()``). Never blocks.
    public var hasLiveConnection: Bool {
        self.state.withLock { state in
            guard !state.released, let connection = state.connection else { return false }
            return connection.isAlive()
        }
    }

    /// The leased connection, when it is already open and can read without a thread now as the
    /// lease asked (read-only or writable), with the statement timeout `statementTimeout` (in
    /// ms, 0: none; nil: whatever it has), and no setup round trip; nil otherwise (then use
    /// ``withConnection(_:)``). Never blocks, so an event loop may call it.
    public func readerWithoutThread(statementTimeout: Int? = nil) -> (any WholeReadingConnection)? {
        self.state.withLock { state -> (any WholeReadingConnection)? in
            guard !state.released, !state.cancelled, let connection = state.connection as? any WholeReadingConnection,
                connection.canReadWithoutThread(readOnly: self.readOnly, statementTimeout: statementTimeout)
            else { return nil }
            return connection
        }
    }

    /// Cancels the statement running on the leased connection, if any; later
    /// ``withConnection(_:)`` calls throw ``DatabaseError/Code/cancelled``.
    ///
    /// Never blocks, so an event loop may call it: the cancel request (for PostgreSQL a
    /// connection of its own to the server) is sent from a background thread, with no lock
    /// held, and only while the lease still holds the connection: a lease released while a
    /// request is on its way gives the connection back to the pool only once every request has
    /// been sent (from that thread), so a late cancel never hits another lease's statement.
    /// The request is repeated (after 50 ms, then backing off to every 500 ms) until the lease
    /// is released: PostgreSQL drops a cancel request that arrives while a statement is just
    /// starting, and a statement the holder starts after this call must be stopped too. The
    /// holder is expected to stop issuing statements once one fails as cancelled.
    ///
    /// A request whose turn comes after the lease was released is not sent, and rightly: a
    /// holder releases only once its statement has returned (the threads' path waits for
    /// libpq, the event-driven path for the reactor's completion), so no statement of the
    /// lease is left to stop, and the connection may already serve another lease.
    public func cancel() {
        let connection = self.state.withLock { state -> (any DatabaseConnection)? in
            state.cancelled = true
            return state.released ? nil : state.connection
        }
        guard let connection else { return }
        self.cancel(connection, afterMilliseconds: 0, thenEvery: 50)
    }

    private func cancel(_ connection: any DatabaseConnection, afterMilliseconds delay: Int, thenEvery next: Int) {
        self.pool.clock.schedule(after: .milliseconds(delay)) {
            let stillHeld = self.state.withLock { state -> Bool in
                guard !state.released, state.connection === connection else { return false }
                state.cancelsInFlight += 1
                return true
            }
            guard stillHeld else { return }
            // No lock held: a slow or unreachable server stalls only this background thread.
            connection.cancel()
            let (giveBack, again) = self.state.withLock { state -> ((any DatabaseConnection)?, Bool) in
                state.cancelsInFlight -= 1
                guard state.released else { return (nil, true) }
                guard state.cancelsInFlight == 0, !state.givenBack else { return (nil, false) }
                state.givenBack = true
                defer { state.pendingGiveBack = nil }
                return (state.pendingGiveBack, false)
            }
            if let giveBack {
                self.pool.giveBack(giveBack, fromStream: self.forStream)
            } else if again {
                self.cancel(connection, afterMilliseconds: next, thenEvery: min(next * 2, 500))
            }
        }
    }

    /// Resets the connection and returns it to the pool. Idempotent. While a cancel request is
    /// being sent, the connection is returned by the thread sending it, once it is done.
    public func release() {
        let (connection, giveBackNow) = self.state.withLock { state -> ((any DatabaseConnection)?, Bool) in
            guard !state.released else { return (nil, false) }
            state.released = true
            let connection = state.connection
            state.connection = nil
            if state.cancelsInFlight > 0 {
                state.pendingGiveBack = connection
                return (nil, false)
            }
            state.givenBack = true
            return (connection, true)
        }
        if giveBackNow { self.pool.giveBack(connection, fromStream: self.forStream) }
    }
}
