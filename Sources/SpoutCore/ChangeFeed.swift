/// Where a poller of the change log stands, and what it has passed on: each poll reads the
/// log's position, then the changes at or after ``position`` (``ChangeTracking/changes(since:)``),
/// and ``advance(to:changes:)`` turns that into the changes not passed on before.
///
/// Contract (by the change log's): every committed change is passed on exactly once, by the
/// first poll that sees it, whatever order transactions commit in. A change below the position
/// a poll read was committed before the poll and is among its changes; one at or after it
/// either is among them (then its writer is remembered, and the writer's changes, which
/// become visible at once, are not passed on again) or comes in a later poll, which reads from
/// that position. Writers are remembered only while they are at or after the position, so
/// what is kept follows the transactions open across a poll, not the changes.
public struct ChangeFeed: Sendable {
    /// Where the next poll reads from.
    public private(set) var position: Int64
    /// The writers at or after ``position`` whose changes were passed on.
    private var passed: Set<Int64> = []

    public init(position: Int64) {
        self.position = position
    }

    /// What one poll passes on.
    public struct Batch: Sendable {
        /// The position the poll read from: a sync read from it sees every change of the batch.
        public var from: Int64
        /// The position after the batch: every change not at or after it has been passed on.
        public var to: Int64
        /// The changes not passed on before, in the order read.
        public var changes: [LoggedChange]
        /// The log was pruned at or after ``from``: changes may be missing, and every
        /// subscriber must be told to sync (its sync read then answers 410 if it must start over).
        public var isPastHorizon: Bool
    }

    /// Takes a poll's answer: `read` (the log's position, read first) and `changes` (every
    /// change at or after ``position``, read after it). Moves to `read`'s position (never
    /// back) and returns what the poll passes on.
    public mutating func advance(to read: ChangeLogPosition, changes: [LoggedChange]) -> Batch {
        let from = self.position
        let fresh = changes.filter { !self.passed.contains($0.writer) }
        self.position = max(self.position, read.position)
        for change in fresh { self.passed.insert(change.writer) }
        let position = self.position
        self.passed = self.passed.filter { $0 >= position }
        return Batch(from: from, to: self.position, changes: fresh, isPastHorizon: from <= read.horizon)
    }
}
