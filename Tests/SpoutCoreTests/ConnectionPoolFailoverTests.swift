import SpoutTestSupport
import Testing

@testable import SpoutCore

/// What the pool does when its server goes away or changes (a failover): a broken connection
/// retires every connection opened before it, idle ones at once and leased ones as they come
/// back, and a new connection that reaches another server does the same and is heard. On a
/// driver that runs no SQL; nothing waits on time.
@Suite struct ConnectionPoolFailoverTests: Sendable {
    let clock = ManualClock()
    let driver = FakeDriver()

    func database(connections: Int, observer: (any DatabaseObserver)? = nil) -> Database {
        Database(
            driver: self.driver, configuration: DatabaseConfiguration(maximumConnections: connections, acquireTimeout: .seconds(5)),
            observer: observer, clock: self.clock)
    }

    /// `count` writing leases, each with its connection opened.
    func openLeases(_ count: Int, on database: Database) async throws -> [ConnectionLease] {
        var leases: [ConnectionLease] = []
        for _ in 0..<count {
            let lease = try await database.lease(readOnly: false)
            try lease.withConnection { _ in }
            leases.append(lease)
        }
        return leases
    }

    func connection(of lease: ConnectionLease) throws -> FakeConnection {
        try lease.withConnection { $0 as! FakeConnection }
    }

    @Test func aBrokenConnectionRetiresTheIdleOnesAtOnceAndTheLeasedOnesWhenTheyComeBack() async throws {
        let database = self.database(connections: 4)
        let leases = try await self.openLeases(4, on: database)
        leases[0].release()
        leases[1].release()
        #expect(database.poolState == PoolState(open: 4, inUse: 2, idle: 2, waiters: 0))

        // The server went away: the first connection to find out breaks.
        try self.connection(of: leases[2]).breakConnection()
        leases[2].release()
        #expect(self.driver.snapshot.closed == 3, "the broken one and both idle ones")
        #expect(database.poolState == PoolState(open: 1, inUse: 1, idle: 0, waiters: 0))

        // A lease now opens a new connection, which stays pooled when given back.
        let fresh = try await self.openLeases(1, on: database)
        #expect(self.driver.snapshot.opened == 5)
        fresh[0].release()
        #expect(database.poolState == PoolState(open: 2, inUse: 1, idle: 1, waiters: 0))

        // The last connection of the old generation, healthy as far as it knows, is closed
        // when it comes back instead of being lent again.
        leases[3].release()
        #expect(self.driver.snapshot.closed == 4)
        #expect(database.poolState == PoolState(open: 1, inUse: 0, idle: 1, waiters: 0))
        let again = try await database.lease(readOnly: false)
        #expect(try self.connection(of: again).serverAddress == nil && self.driver.snapshot.opened == 5, "the new one is lent")
        again.release()
    }

    @Test func onlyTheFirstBrokenConnectionOfAGenerationRetiresTheOthers() async throws {
        let database = self.database(connections: 3)
        let old = try await self.openLeases(2, on: database)
        try self.connection(of: old[0]).breakConnection()
        old[0].release()
        let new = try await self.openLeases(1, on: database)
        // Another connection of the old generation breaks too: the new one is not retired.
        try self.connection(of: old[1]).breakConnection()
        old[1].release()
        new[0].release()
        #expect(self.driver.snapshot.closed == 2)
        #expect(database.poolState == PoolState(open: 1, inUse: 0, idle: 1, waiters: 0))
    }

    @Test func aNewConnectionOnAnotherServerRetiresTheOldOnesAndIsHeard() async throws {
        let observer = CountingObserver()
        let database = self.database(connections: 4, observer: observer)
        self.driver.server.withLock { $0 = "10.0.0.1:5432" }
        let old = try await self.openLeases(2, on: database)
        old[1].release()
        #expect(database.server == "10.0.0.1:5432")
        #expect(observer.serverChanges.values.isEmpty, "a first server is no change")

        // Promoted elsewhere: the next new connection reaches the other server. The idle
        // connection is lent first (nothing tells it is stale before then), so lease two.
        self.driver.server.withLock { $0 = "10.0.0.2:5432" }
        let next = try await self.openLeases(2, on: database)
        #expect(try self.connection(of: next[0]).serverAddress == "10.0.0.1:5432")
        #expect(try self.connection(of: next[1]).serverAddress == "10.0.0.2:5432")
        #expect(observer.serverChanges.values == ["primary: 10.0.0.1:5432 -> 10.0.0.2:5432"])
        #expect(database.server == "10.0.0.2:5432")

        // Connections to the old server are closed as they come back; the new one stays.
        old[0].release()
        next[0].release()
        next[1].release()
        #expect(self.driver.snapshot.closed == 2)
        #expect(database.poolState == PoolState(open: 1, inUse: 0, idle: 1, waiters: 0))
        let lent = try await database.lease(readOnly: false)
        #expect(try self.connection(of: lent).serverAddress == "10.0.0.2:5432")
        lent.release()
        #expect(observer.serverChanges.values.count == 1)
    }
}
