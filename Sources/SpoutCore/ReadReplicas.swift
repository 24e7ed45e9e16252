import Synchronization

/// Read replicas of a primary database: read-only work is spread across them, and falls back
/// to the primary whenever none can take it, without an error for the caller.
///
/// Contract:
/// - ``lease()`` tries the replicas round robin, skipping those marked unavailable. A replica
///   is used only through a connection known to be open: a pooled connection that the server
///   closed (``DatabaseConnection/isAlive()``) is discarded and the next one tried, and a new
///   one is opened before the lease is handed out. A replica whose connection cannot be
///   opened, or whose lag is past `maximumLag`, is marked unavailable for `retryInterval`,
///   then tried again. Nil means "use the primary".
/// - Once per `lagCheckInterval` per replica, a lease about to be handed out first makes one
///   round trip that measures the replica's lag (enforced when `maximumLag` is set): this also
///   finds a replica that went away behind a pooler, whose connections to the pooler look
///   fine. A request that fails on a replica with a connection-class error marks it
///   unavailable at once (``reportFailure(on:error:)``).
/// - Each replica has its own pool and threads (``Database``), sized like the primary's.
/// - Times (set aside until, lag checked at) go by `clock` (``DatabaseClock``).
public final class ReadReplicas: Sendable {
    /// One replica and what is known of its health.
    public final class Replica: Sendable {
        public let database: Database
        fileprivate let health = Mutex(Health())

        fileprivate struct Health {
            /// ``DatabaseClock/now`` values.
            var unavailableUntil: Duration?
            var problem: String?
            var lagMilliseconds: Int?
            var lagCheckedAt: Duration?
        }

        /// `database`, named (``Database/name``) for logs, metrics and `/ready` (`replica 1`,
        /// ...): never by its URL, which may hold a password.
        public init(database: Database) {
            self.database = database
        }

        public var name: String { self.database.name }

        /// What is known at `now` (``DatabaseClock/now``): available or not, why not, and the
        /// last lag measured. ``ReadReplicas/status(of:)`` reads it by the set's clock.
        fileprivate func status(at now: Duration) -> Status {
            self.health.withLock { health in
                let unavailable = health.unavailableUntil.map { $0 > now } ?? false
                return Status(
                    name: self.name, isAvailable: !unavailable, problem: unavailable ? health.problem : nil,
                    lagMilliseconds: health.lagMilliseconds)
            }
        }
    }

    /// A replica's state as ``ReadReplicas/status(of:)`` reports it.
    public struct Status: Sendable, Hashable {
        public var name: String
        public var isAvailable: Bool
        /// Why it is unavailable (`connection failed`, `lagging 1234 ms`); nil when available.
        public var problem: String?
        public var lagMilliseconds: Int?
    }

    public let replicas: [Replica]
    public let maximumLag: Duration?
    public let retryInterval: Duration
    public let lagCheckInterval: Duration
    let clock: any DatabaseClock
    private let next = Atomic<Int>(0)

    public init(
        _ replicas: [Replica], maximumLag: Duration? = nil, retryInterval: Duration = .seconds(5),
        lagCheckInterval: Duration = .seconds(1), clock: any DatabaseClock = SystemDatabaseClock()
    ) {
        self.clock = clock
        self.replicas = replicas
        self.maximumLag = maximumLag
        self.retryInterval = retryInterval
        self.lagCheckInterval = lagCheckInterval
    }

    /// A read-only lease on an available replica, or nil when none can take the work now (the
    /// caller then uses the primary). Never throws. `forStream`: see ``Database/lease(readOnly:forStream:)``.
    public func lease(forStream: Bool = false) async -> ConnectionLease? {
        let start = self.next.add(1, ordering: .relaxed).newValue
        for offset in 0..<self.replicas.count {
            let replica = self.replicas[(start + offset) % self.replicas.count]
            guard self.status(of: replica).isAvailable else { continue }
            if let lease = await self.verifiedLease(on: replica, forStream: forStream) { return lease }
        }
        return nil
    }

    /// A lease on `replica` whose connection is open (and not lagging, when that is checked),
    /// or nil after marking the replica unavailable.
    private func verifiedLease(on replica: Replica, forStream: Bool) async -> ConnectionLease? {
        // Each stale pooled connection found is discarded; one more than the pool holds ends
        // the search.
        for _ in 0...replica.database.configuration.maximumConnections {
            // A busy replica pool waits like any other; only a failure moves on.
            guard let lease = try? await replica.database.lease(readOnly: true, forStream: forStream) else { return nil }
            let now = self.clock.now
            let checkLag = replica.health.withLock { health in
                health.lagCheckedAt.map { now - $0 >= self.lagCheckInterval } ?? true
            }
            let hadConnection = lease.hasConnection
            let live = hadConnection && lease.hasLiveConnection
            if !checkLag && live { return lease }
            if hadConnection && !live {
                lease.release()  // closed, since it is broken
                continue
            }
            do {
                // Opening the connection and the round trip block: on the replica's threads.
                let lag = try await lease.threads.run {
                    try lease.withConnection { connection in checkLag ? try connection.replicationLag() : nil }
                }
                if checkLag {
                    let checkedAt = self.clock.now
                    replica.health.withLock {
                        $0.lagMilliseconds = lag
                        $0.lagCheckedAt = checkedAt
                    }
                }
                if let lag {
                    if let maximum = self.maximumLag, lag > maximum.statementTimeoutMilliseconds {
                        lease.release()
                        self.markUnavailable(replica, problem: "lagging \(lag) ms")
                        return nil
                    }
                }
                return lease
            } catch {
                lease.release()
                self.markUnavailable(replica, problem: (error as? DatabaseError).map { "\($0.code)" } ?? "failed")
                return nil
            }
        }
        return nil
    }

    /// A request on `lease` failed with `error`: when the lease is a replica's and the error
    /// says the server (or the pooler's connection to it) is gone, the replica is set aside
    /// for `retryInterval`, so the next requests go to the primary. Returns whether it was.
    @discardableResult
    public func reportFailure(on lease: ConnectionLease, error: any Error) -> Bool {
        guard let replica = self.replicas.first(where: { $0.name == lease.databaseName }),
            let error = error as? DatabaseError
        else { return false }
        let gone = Self.meansServerGone(error)
        if gone { self.markUnavailable(replica, problem: "\(error.code)") }
        return gone
    }

    /// Whether `error` says the server (or a pooler's connection to it) is gone: the
    /// connection broke or could not be opened, or the server stopped answering. The drivers
    /// map their own codes to these (PostgreSQL: SQLSTATE class 08, and 57P01-57P03, shutting
    /// down or not accepting; a connection its answer deadline shut).
    public static func meansServerGone(_ error: any Error) -> Bool {
        guard let error = error as? DatabaseError else { return false }
        return error.code == .connectionLost || error.code == .connectionFailed || error.code == .notAnswering
    }

    /// What is known of `replica` now: available or not, why not, and the last lag measured.
    public func status(of replica: Replica) -> Status {
        replica.status(at: self.clock.now)
    }

    private func markUnavailable(_ replica: Replica, problem: String) {
        let until = self.clock.now + self.retryInterval
        replica.health.withLock { health in
            health.unavailableUntil = until
            health.problem = problem
        }
    }

    /// Closes every replica's pool.
    public func close() {
        for replica in self.replicas { replica.database.close() }
    }
}
