@testable import SpoutCore
import Synchronization

/// A driver whose connections run no SQL: they count what the pool does to them (opens,
/// resets, cancel requests, closes) and fail on demand, so the pool's rules are tested without
/// a database.
final class FakeDriver: DatabaseDriver {
    struct Counts: Sendable {
        var opened = 0
        var resets = 0
        var cancels = 0
        var closed = 0
    }

    let dialect = SQLDialect.sqlite
    let hasReadOnlyConnections = false
    let counts = Mutex(Counts())
    /// When set, opening a connection throws it.
    let openError = Mutex<DatabaseError?>(nil)
    /// The server new connections reach (``FakeConnection/serverAddress``); nil: none.
    let server = Mutex<String?>(nil)

    func connect(readOnly: Bool, statistics: QueryStatistics) throws -> any DatabaseConnection {
        if let error = self.openError.withLock({ $0 }) { throw error }
        self.counts.withLock { $0.opened += 1 }
        return FakeConnection(driver: self, server: self.server.withLock { $0 })
    }

    var snapshot: Counts { self.counts.withLock { $0 } }
}

/// A connection of ``FakeDriver``.
final class FakeConnection: DatabaseConnection {
    let driver: FakeDriver
    let serverAddress: String?
    private let broken = Atomic<Bool>(false)
    private let transaction = Atomic<Bool>(false)

    init(driver: FakeDriver, server: String? = nil) {
        self.driver = driver
        self.serverAddress = server
    }

    var dialect: SQLDialect { .sqlite }

    func query(_ sql: ParsedSQL, _ parameters: [SQLValue], options: QueryOptions) throws -> any RowCursor {
        throw DatabaseError(.unsupported, message: "a fake connection runs no SQL")
    }

    func explain(_ sql: ParsedSQL, _ parameters: [SQLValue], options: QueryOptions) throws -> [String] { [] }
    func execute(_ sql: ParsedSQL, _ parameters: [SQLValue]) throws -> Int { 0 }
    func executeScript(_ sql: String) throws {}
    func begin(readOnly: Bool) throws { self.transaction.store(true, ordering: .relaxed) }
    func commit() throws { self.transaction.store(false, ordering: .relaxed) }
    func rollback() throws { self.transaction.store(false, ordering: .relaxed) }
    func tableExists(_ name: String) throws -> Bool { false }
    func lockUntilTransactionEnds(_ key: Int64) throws {}
    var isInTransaction: Bool { self.transaction.load(ordering: .relaxed) }
    func setReadOnly(_ readOnly: Bool) throws {}
    func setStatementTimeout(milliseconds: Int?) throws {}
    func cancel() { self.driver.counts.withLock { $0.cancels += 1 } }
    var isBroken: Bool { self.broken.load(ordering: .relaxed) }
    func breakConnection() { self.broken.store(true, ordering: .relaxed) }
    func replicationLag() throws -> Int? { 0 }

    func reset() -> Bool {
        self.driver.counts.withLock { $0.resets += 1 }
        self.transaction.store(false, ordering: .relaxed)
        return true
    }

    func close() { self.driver.counts.withLock { $0.closed += 1 } }

    func bulkInsert(into table: String, columns: [String]) throws -> any BulkInserter {
        throw DatabaseError(.unsupported, message: "a fake connection runs no SQL")
    }
}
