extension Database {
    /// Runs one piece of database work: the one place in a server that leases a connection.
    ///
    /// In order:
    /// 1. Leases a connection without blocking a thread: from an available read replica when
    ///    the work is read-only and `onReplica` (``ReadReplicas``), else from this database's
    ///    pool (``lease(readOnly:forStream:)``; a stream's lease counts against the stream
    ///    limit). The caller sees no difference: the statements, their answers and the JSON
    ///    bytes are the same, only as fresh as the replica. Throws
    ///    ``DatabaseError/Code/poolExhausted`` after the acquire timeout, and
    ///    ``DatabaseError/Code/cancelled`` when the task is cancelled while waiting. The
    ///    observers (the call's and the database's, ``observer``) hear how long the wait took,
    ///    or that it timed out.
    ///    Read-only work outside an explicit transaction, when this database shares
    ///    connections (``sharedReaders``) and no replica would take the work, leases only if
    ///    its session needs a connection of its own (``DatabaseSession``): a read whole may be
    ///    answered on a shared connection instead.
    /// 2. Calls `body` with a ``DatabaseSession`` on that connection: its
    ///    ``DatabaseSession/run(_:)`` runs blocking calls on the database's threads under the
    ///    work's statement timeout, transaction and role.
    /// 3. Releases the lease exactly once, after `body` returns or throws (a reset that needs
    ///    a round trip runs on the database's threads). The observers hear how long it was held.
    /// 4. When `body` threw because the replica it ran on is gone
    ///    (``DatabaseSession/failsOver(_:)``) and `retryOnPrimary()` still allows it (nothing
    ///    was sent yet, say), sets the replica aside and runs `body` again on the primary.
    public func withSession<T: Sendable>(
        _ work: DatabaseWork, observer: (any DatabaseObserver)? = nil, retryOnPrimary: @Sendable () -> Bool = { true },
        _ body: (DatabaseSession) async throws -> T
    ) async throws -> T {
        let observers = ObserverPair.combining(self.observer, observer)
        let session: DatabaseSession
        let waitStarted = ContinuousClock.now
        if work.onReplica, let replicas = self.replicas, let replicaLease = await replicas.lease(forStream: work.isStream) {
            observers?.connectionAcquired(database: replicaLease.databaseName, after: ContinuousClock.now - waitStarted)
            session = DatabaseSession(lease: replicaLease, work: work, configuration: self.configuration, observer: observers)
        } else {
            session = DatabaseSession(on: self, work: work, observer: observers)
            let mayShare = self.sharedReaders?.mayServe(work) == true && !(work.onReplica && self.replicas != nil)
            // Work that may read on a shared connection leases only if its session needs to.
            if !mayShare { _ = try await session.leased(waitingSince: waitStarted) }
        }
        let result = await Self.outcome { try await body(session) }
        await session.end()
        if case .failure(let error) = result, session.work.onReplica, let lease = session.lease,
            self.replicas?.reportFailure(on: lease, error: error) == true, retryOnPrimary()
        {
            var primary = work
            primary.onReplica = false
            return try await self.withSession(primary, observer: observer, retryOnPrimary: retryOnPrimary, body)
        }
        return try result.get()
    }

    /// What `body` returns or throws, caught so the session can end either way.
    private static func outcome<T>(_ body: () async throws -> T) async -> Result<T, any Error> {
        do {
            return .success(try await body())
        } catch {
            return .failure(error)
        }
    }
}
