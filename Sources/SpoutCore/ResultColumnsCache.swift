import Synchronization

/// The result columns last seen for each statement of one database, keyed by SQL text, so
/// work that depends on them can be planned before the statement answers (a single-row
/// response's children, ``SingleRowPlan``). Only ever a guess: users check it against the
/// columns that arrive.
final class ResultColumnsCache: Sendable {
    private let entries = Mutex<[String: [Column]]>([:])
    /// When this many statements are known, the cache starts over (endpoints have a fixed
    /// set of statements; this bounds what ad-hoc SQL can make it hold).
    private let capacity: Int

    init(capacity: Int = 1024) {
        self.capacity = capacity
    }

    /// The columns `text` answered with when last recorded.
    func columns(of text: String) -> [Column]? {
        self.entries.withLock { $0[text] }
    }

    /// Records the columns `text` answered with.
    func record(_ columns: [Column], of text: String) {
        self.entries.withLock { entries in
            guard entries[text] != columns else { return }
            if entries.count >= self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[text] = columns
        }
    }
}
