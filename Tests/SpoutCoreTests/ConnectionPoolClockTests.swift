import SpoutTestSupport
import Synchronization
import Testing

@testable import SpoutCore

/// The pool's rules on a clock the test moves and a driver that runs no SQL: acquire
/// timeouts, first-come waiters, the stream limit, cancellation, repeated cancel requests, the
/// one release of ``Database/withSession(_:observer:retryOnPrimary:_:)``, and replicas set
/// aside and retried. No assertion depends on how fast the machine is.
@Suite struct ConnectionPoolClockTests: Sendable {
    let clock = ManualClock()
    let driver = FakeDriver()

    func database(
        connections: Int = 1, reserve: Int = 0, replicas: ReadReplicas? = nil, name: String = "primary", observer: (any DatabaseObserver)? = nil
    ) -> Database {
        Database(
            driver: self.driver,
            configuration: DatabaseConfiguration(
                maximumConnections: connections, acquireTimeout: .seconds(5), streamReserve: reserve, streamAcquireTimeout: .seconds(30)),
            replicas: replicas, name: name, observer: observer, clock: self.clock)
    }

    /// Waits (yielding, a real millisecond at a time: ``poll(within:every:_:until:)``) until
    /// `condition` holds, which runs on the test's own task. The 20 s limit only ends a broken
    /// run: on a busy machine a task can take a while to reach its wait, and the fake clock
    /// does not move meanwhile.
    func eventually(_ what: Comment, _ condition: () -> Bool) async throws {
        try #require(try await poll(every: .milliseconds(1), { condition() }, until: { $0 }), what)
    }

    func code(of error: any Error) -> DatabaseError.Code? {
        (error as? DatabaseError)?.code
    }

    @Test func aWaiterTimesOutWhenTheClockPassesTheAcquireTimeoutAndNotBefore() async throws {
        let database = self.database()
        let held = try await database.lease(readOnly: true)
        let waiter = Task { try await database.lease(readOnly: true) }
        try await self.eventually("the second lease waits") { database.leasesWaiting == 1 }
        self.clock.advance(by: .milliseconds(4999))
        #expect(database.leasesWaiting == 1)
        self.clock.advance(by: .milliseconds(1))
        let result = await waiter.result
        #expect(result.failureCode == .poolExhausted)
        #expect(database.leasesWaiting == 0)
        held.release()
    }

    /// One timer per pool: waiters served in time leave at most the one timer behind, which
    /// then finds nobody and starts none (before, each waiter left a timer of its own, and
    /// under load a thread woke for each).
    @Test func waitersServedInTimeLeaveNoTimerPerWaiter() async throws {
        let database = self.database()
        for _ in 0..<5 {
            let held = try await database.lease(readOnly: true)
            let waiter = Task { try await database.lease(readOnly: true) }
            try await self.eventually("the lease waits") { database.leasesWaiting == 1 }
            held.release()
            try await waiter.value.release()
        }
        #expect(self.clock.pending == 1)
        self.clock.advance(by: .seconds(5))
        #expect(self.clock.pending == 0)
        // And the next waiter starts a timer again, which fails it in time.
        let held = try await database.lease(readOnly: true)
        let waiter = Task { try await database.lease(readOnly: true) }
        try await self.eventually("the lease waits") { database.leasesWaiting == 1 }
        self.clock.advance(by: .seconds(5))
        #expect(await waiter.result.failureCode == .poolExhausted)
        held.release()
    }

    /// A short wait that arrives behind a long one keeps its own deadline, and the long one
    /// still ends at its own.
    @Test func eachWaiterEndsAtItsOwnDeadlineWhateverTheOrder() async throws {
        let database = self.database(connections: 1)
        let held = try await database.lease(readOnly: true, forStream: true)
        let stream = Task { try await database.lease(readOnly: true, forStream: true) }
        try await self.eventually("the stream waits") { database.leasesWaiting == 1 }
        self.clock.advance(by: .seconds(10))
        let short = Task { try await database.lease(readOnly: true) }
        try await self.eventually("the short lease waits too") { database.leasesWaiting == 2 }
        self.clock.advance(by: .milliseconds(4999))
        #expect(database.leasesWaiting == 2)
        self.clock.advance(by: .milliseconds(1))
        #expect(await short.result.failureCode == .poolExhausted)
        self.clock.advance(by: .milliseconds(14999))
        #expect(database.leasesWaiting == 1)
        self.clock.advance(by: .milliseconds(1))
        #expect(await stream.result.failureCode == .poolExhausted)
        #expect(self.clock.pending == 0)
        held.release()
    }

    @Test func waitersAreServedFirstComeFirstServed() async throws {
        let database = self.database()
        let first = try await database.lease(readOnly: true)
        let order = Recorder<Int>()
        let second = Task {
            let lease = try await database.lease(readOnly: true)
            order.append(2)
            return lease
        }
        try await self.eventually("the second lease waits") { database.leasesWaiting == 1 }
        let third = Task {
            let lease = try await database.lease(readOnly: true)
            order.append(3)
            return lease
        }
        try await self.eventually("the third lease waits") { database.leasesWaiting == 2 }
        first.release()
        let secondLease = try await second.value
        #expect(order.values == [2])
        secondLease.release()
        try await third.value.release()
        #expect(order.values == [2, 3])
        #expect(self.driver.snapshot.opened == 0, "no lease ran work, so none opened a connection")
    }

    @Test func aStreamWaitsForItsTurnWhileShortWorkTakesTheFreeConnection() async throws {
        let database = self.database(connections: 2, reserve: 1)
        let stream = try await database.lease(readOnly: true, forStream: true)
        let secondStream = Task { try await database.lease(readOnly: true, forStream: true) }
        try await self.eventually("the second stream waits, with a connection free") { database.leasesWaiting == 1 }
        let short = try await database.lease(readOnly: true)
        #expect(database.leasesWaiting == 1)
        short.release()
        #expect(database.leasesWaiting == 1, "a free connection does not admit a stream past the limit")
        stream.release()
        try await secondStream.value.release()
        // A stream's wait has its own, longer timeout.
        let third = try await database.lease(readOnly: true, forStream: true)
        let fourth = Task { try await database.lease(readOnly: true, forStream: true) }
        try await self.eventually("the fourth stream waits") { database.leasesWaiting == 1 }
        self.clock.advance(by: .seconds(29))
        #expect(database.leasesWaiting == 1)
        self.clock.advance(by: .seconds(1))
        #expect(await fourth.result.failureCode == .poolExhausted)
        third.release()
    }

    @Test func cancellingAWaitingTaskRemovesItsWaiter() async throws {
        let database = self.database()
        let held = try await database.lease(readOnly: true)
        let waiter = Task { try await database.lease(readOnly: true) }
        try await self.eventually("the lease waits") { database.leasesWaiting == 1 }
        waiter.cancel()
        #expect(await waiter.result.failureCode == .cancelled)
        #expect(database.leasesWaiting == 0)
        held.release()
        // The slot is free for the next one at once: nothing was left behind.
        try await database.lease(readOnly: true).release()
    }

    @Test func cancelRequestsRepeatOnTheClockUntilTheLeaseIsReleased() async throws {
        let database = self.database()
        let opened = try await database.withSession(DatabaseWork(readOnly: true)) { session in
            try await session.run { _ in true }
        }
        #expect(opened)
        let lease = try await database.lease(readOnly: true)
        // The connection is open (the pool keeps it): the lease holds it.
        #expect(lease.hasConnection)
        lease.cancel()
        self.clock.advance(by: .zero)
        try await self.eventually("the first request is sent") { self.driver.snapshot.cancels == 1 }
        self.clock.advance(by: .milliseconds(50))
        try await self.eventually("and repeated after 50 ms") { self.driver.snapshot.cancels == 2 }
        self.clock.advance(by: .milliseconds(100))
        try await self.eventually("then after 100 ms") { self.driver.snapshot.cancels == 3 }
        lease.release()
        self.clock.advance(by: .seconds(10))
        #expect(self.driver.snapshot.cancels == 3, "none after the release")
        #expect(self.clock.pending == 0)
    }

    @Test func withSessionReleasesExactlyOnceWhateverTheBodyDoes() async throws {
        let database = self.database()
        struct Failure: Error {}
        await #expect(throws: Failure.self) {
            try await database.withSession(DatabaseWork(readOnly: false)) { session in
                try await session.run { _ in () }
                throw Failure()
            }
        }
        #expect(self.driver.snapshot.resets == 1)
        #expect(database.poolState.inUse == 0)
        try await database.withSession(DatabaseWork(readOnly: false)) { session in
            try await session.run { _ in () }
        }
        #expect(self.driver.snapshot.resets == 2)
        #expect(database.poolState == PoolState(open: 1, inUse: 0, idle: 1, waiters: 0))
    }

    @Test func cancellingTheTaskCancelsTheRunningStatementOnce() async throws {
        let database = self.database()
        let observer = CountingObserver()
        let started = Recorder<Bool>()
        let task = Task {
            try await database.withSession(DatabaseWork(readOnly: true), observer: observer) { session in
                try await session.run { connection in
                    started.append(true)
                    // A statement that runs until it is cancelled.
                    while (connection as! FakeConnection).driver.snapshot.cancels == 0 {}
                    throw DatabaseError(.cancelled, message: "cancelled")
                }
            }
        }
        try await self.eventually("the statement runs") { !started.values.isEmpty }
        task.cancel()
        try await self.eventually("the cancel request is sent") {
            self.clock.advance(by: .zero)
            return self.driver.snapshot.cancels >= 1
        }
        #expect(await task.result.failureCode == .cancelled)
        #expect(observer.cancels.values.count == 1)
        #expect(observer.acquired.values == ["primary"])
    }

    /// The database's own observer (the server's metrics) hears all of its work, and a call's
    /// observer that call's: waits, releases, acquire and statement timeouts.
    @Test func theDatabasesObserverHearsEveryCallBesideTheCallsOwn() async throws {
        let metrics = CountingObserver()
        let database = self.database(observer: metrics)
        let call = CountingObserver()
        let timedOut = await #expect(throws: DatabaseError.self) {
            try await database.withSession(DatabaseWork(readOnly: true, isStream: true), observer: call) { session in
                try await session.run { _ in throw DatabaseError(.statementTimeout, message: "canceling statement due to statement timeout") }
            }
        }
        #expect(timedOut?.code == .statementTimeout)
        try await database.withSession(DatabaseWork(readOnly: false)) { _ in () }
        #expect(metrics.acquired.values == ["primary", "primary"])
        #expect(metrics.released.values == ["primary stream", "primary"])
        #expect(metrics.statementTimeouts.values.count == 1)
        #expect(call.acquired.values == ["primary"] && call.released.values == ["primary stream"] && call.statementTimeouts.values.count == 1)

        // No connection within the acquire timeout: both hear it, nothing is released.
        let held = try await database.lease(readOnly: true)
        let waiter = Task { try await database.withSession(DatabaseWork(readOnly: true), observer: call) { _ in () } }
        try await self.eventually("the work waits") { database.leasesWaiting == 1 }
        self.clock.advance(by: .seconds(5))
        #expect(await waiter.result.failureCode == .poolExhausted)
        #expect(metrics.acquireTimeouts.values == ["primary"] && call.acquireTimeouts.values == ["primary"])
        #expect(metrics.released.values.count == 2)
        held.release()
    }

    @Test func aReplicaThatIsGoneIsSetAsideAndTheWorkRunsOnThePrimary() async throws {
        let replica = ReadReplicas.Replica(database: self.database(name: "replica 1"))
        let replicas = ReadReplicas([replica], retryInterval: .seconds(5), clock: self.clock)
        let primary = self.database(replicas: replicas)
        let observer = CountingObserver()
        let ranOn = Recorder<String>()
        let answer = try await primary.withSession(DatabaseWork(readOnly: true, onReplica: true), observer: observer) { session in
            ranOn.append(session.databaseName)
            if session.work.onReplica { throw DatabaseError(.connectionLost, message: "replica went away") }
            return 42
        }
        #expect(answer == 42)
        #expect(ranOn.values == ["replica 1", "primary"])
        #expect(replicas.status(of: replica).isAvailable == false)
        #expect(replicas.status(of: replica).problem == "connection lost")
        // Set aside: the next read goes straight to the primary.
        let next = try await primary.withSession(DatabaseWork(readOnly: true, onReplica: true)) { $0.databaseName }
        #expect(next == "primary")
        // Until the retry interval has passed on the clock.
        self.clock.advance(by: .seconds(5))
        #expect(replicas.status(of: replica).isAvailable)
        let later = try await primary.withSession(DatabaseWork(readOnly: true, onReplica: true)) { $0.databaseName }
        #expect(later == "replica 1")
    }

    @Test func aReplicaFailureAfterBytesWentOutIsNotRetried() async throws {
        let replica = ReadReplicas.Replica(database: self.database(name: "replica 1"))
        let replicas = ReadReplicas([replica], clock: self.clock)
        let primary = self.database(replicas: replicas)
        let attempts = Recorder<Int>()
        await #expect(throws: DatabaseError.self) {
            try await primary.withSession(DatabaseWork(readOnly: true, onReplica: true), retryOnPrimary: { false }) { _ in
                attempts.append(1)
                throw DatabaseError(.connectionLost, message: "replica went away mid-stream")
            }
        }
        #expect(attempts.values.count == 1)
        #expect(replicas.status(of: replica).isAvailable == false, "the replica is set aside all the same")
    }

    @Test func aClosedDatabaseRefusesWorkWithoutLeakingItsLease() async throws {
        let database = self.database()
        database.close()
        await #expect(throws: DatabaseError.self) {
            try await database.withSession(DatabaseWork(readOnly: true)) { _ in () }
        }
        #expect(database.poolState.inUse == 0)
    }
}

/// Records what ``DatabaseObserver`` hears.
final class CountingObserver: DatabaseObserver {
    let cancels = Recorder<Void>()
    let acquired = Recorder<String>()
    /// The database, and ` stream` for a stream's work.
    let released = Recorder<String>()
    let acquireTimeouts = Recorder<String>()
    let statementTimeouts = Recorder<Void>()
    /// `database: previous -> server`.
    let serverChanges = Recorder<String>()

    func serverChanged(database: String, from previous: String, to server: String) {
        self.serverChanges.append("\(database): \(previous) -> \(server)")
    }

    func connectionAcquired(database: String, after wait: Duration) {
        self.acquired.append(database)
    }

    func acquireTimedOut(database: String) {
        self.acquireTimeouts.append(database)
    }

    func connectionReleased(database: String, after held: Duration, work: DatabaseWork) {
        self.released.append(database + (work.isStream ? " stream" : ""))
    }

    func statementCancelled() {
        self.cancels.append(())
    }

    func statementTimedOut() {
        self.statementTimeouts.append(())
    }
}

/// Values appended from any task or thread, in order.
final class Recorder<Value: Sendable>: Sendable {
    private let storage = Mutex<[Value]>([])

    func append(_ value: Value) {
        self.storage.withLock { $0.append(value) }
    }

    var values: [Value] { self.storage.withLock { $0 } }
}

extension Result where Failure == any Error {
    /// The ``DatabaseError`` code of a failure; nil for a success or another error.
    var failureCode: DatabaseError.Code? {
        guard case .failure(let error) = self else { return nil }
        return (error as? DatabaseError)?.code
    }
}
