/// A mark of a database's committed state, read without a statement: two equal marks mean no
/// transaction committed between the two reads. What it holds is the driver's (SQLite: the
/// WAL-index header its writers publish each commit in).
public struct CommitMark: Hashable, Sendable {
    public var words: SIMD8<UInt64>

    public init(words: SIMD8<UInt64>) {
        self.words = words
    }
}

/// Tells whether a database committed anything since a ``CommitMark`` was read, without a
/// statement, a lock or a system call: what lets a sync read after no change be answered
/// without a round trip to the database (``ChangeTracking/commitWatch()``).
///
/// Contract: a transaction whose commit became visible to statements after ``mark()``
/// returned a mark makes every later ``mark()`` return another one (or nil). So a statement
/// run after a mark was read sees every commit made before that mark; while the mark reads
/// the same, what the statement saw is still current. ``mark()`` never blocks: any thread,
/// event loops included, may call it.
public protocol CommitWatch: AnyObject, Sendable {
    /// The committed state now; nil when it cannot tell (a commit being published), and then
    /// the caller asks the database.
    func mark() -> CommitMark?

    /// Whether the watch still reads the database's state (its files are the ones it opened).
    /// May block: call it off the event loop, before relying on a mark read before.
    func isCurrent() -> Bool
}
