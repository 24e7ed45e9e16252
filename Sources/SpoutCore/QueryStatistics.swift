import Synchronization

/// Counters shared by every connection of a ``Database``.
///
/// Drivers call ``recordStatement()`` once for every SQL statement they send to the database
/// on behalf of a caller (each query or execute once, however many FETCH round trips its
/// cursor takes; a bulk load or script once), not for the
/// transaction control statements (BEGIN/COMMIT/ROLLBACK) or session settings. Tests read it
/// to prove that attached arrays do not cost one query per parent row.
public final class QueryStatistics: Sendable {
    private let statements = Atomic<Int>(0)
    private let eventDrivenRuns = Atomic<Int>(0)
    private let sharedReads = Atomic<Int>(0)
    private let sharedReadsBehindOthers = Atomic<Int>(0)
    private let copiedRows = Atomic<Int>(0)

    public init() {}

    /// The number of statements run so far.
    public var statementCount: Int { self.statements.load(ordering: .relaxed) }

    /// How many reads without a thread started (``WholeReadingConnection``): responses served
    /// without a thread blocked on the database.
    public var eventDrivenRunCount: Int { self.eventDrivenRuns.load(ordering: .relaxed) }

    /// How many reads were sent on a shared connection (``SharedReadingConnection``).
    public var sharedReadCount: Int { self.sharedReads.load(ordering: .relaxed) }

    /// How many of those were sent while another read was in flight on the same connection:
    /// pipelined behind it.
    public var sharedReadsBehindOthersCount: Int { self.sharedReadsBehindOthers.load(ordering: .relaxed) }

    /// A read was sent on a shared connection, behind `othersInFlight` reads.
    public func recordSharedRead(othersInFlight: Int) {
        self.sharedReads.add(1, ordering: .relaxed)
        if othersInFlight > 0 { self.sharedReadsBehindOthers.add(1, ordering: .relaxed) }
    }

    /// How many rows a bulk load (PostgreSQL's `COPY`) has sent to the database so far.
    public var copiedRowCount: Int { self.copiedRows.load(ordering: .relaxed) }

    /// A bulk load sent `count` more rows.
    public func recordCopiedRows(_ count: Int) {
        self.copiedRows.add(count, ordering: .relaxed)
    }

    public func recordStatement() {
        self.statements.add(1, ordering: .relaxed)
    }

    public func recordEventDrivenRun() {
        self.eventDrivenRuns.add(1, ordering: .relaxed)
    }
}
