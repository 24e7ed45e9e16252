import SpoutCore
import Synchronization

/// Where the change log of one database stands, read once for every sync read waiting
/// (``SpoutCore/ChangeTracking/probeChangeLog()``): what answers a sync read after no change
/// without a database session of its own.
///
/// Contract: ``read()`` returns the reading of a probe that *started after it was called*, so
/// a change committed before the call (by any instance: the probe reads the primary) is among
/// what the reading saw; or, where the database has a ``SpoutCore/CommitWatch``, the last
/// probe's reading while the watch's mark is the one read before that probe's statement ran
/// (nothing committed since, so the reading is current), at most ``watchRecheck`` after that
/// probe checked the watch still reads the database. One probe runs at a time; the callers
/// that arrive while it runs wait for the next, which then answers all of them: a burst of
/// sync reads costs a statement per probe, not per read, and each waits at most two probes.
///
/// Each probe runs in the task of one of the callers it answers (the first to arrive with no
/// probe running, then the first of those who waited for the next): a read costs the hop to a
/// database thread and back, and no task of its own. A probe that fails (its caller's task
/// cancelled while it waited for a connection, say) fails every caller it would have answered;
/// the next caller's probe runs all the same.
///
/// A class behind a lock: one value shared by every handler of the database.
final class ChangeLogProbe: Sendable {
    /// What a waiting caller is resumed with: the reading of the probe that started after it
    /// called, or its turn to run the next probe.
    enum Turn {
        case reading(Result<ChangeLogProbeReading, any Error>)
        case probe
    }

    typealias Waiter = CheckedContinuation<Turn, Never>

    /// Whether a probe runs, and who waits for the next one.
    private struct State {
        var running = false
        var waiting: [Waiter] = []
        /// The last probe's reading.
        var last: ChangeLogProbeReading?
        /// The database's commit watch, once the first probe made one (nil: the driver has
        /// none, or it stopped reading the database).
        var watch: (any CommitWatch)?
        /// Whether the first probe asked the driver for a watch: it is asked once.
        var watchTried = false
        /// The watch's mark read before the last probe's statement (nil: no watch, or a
        /// commit was being published).
        var lastMark: CommitMark?
        /// When the last probe found the watch still reading the database.
        var watchChecked: ContinuousClock.Instant?
    }

    /// How long a probe's check that the commit watch still reads the database holds: past
    /// it, a read after no change runs a probe again, which checks it anew.
    static let watchRecheck = Duration.seconds(1)

    let database: Database
    private let state = Mutex(State())

    init(database: Database) {
        self.database = database
    }

    /// The reading of a probe started after this call; throws what the probe threw (the
    /// database's error, unanswered).
    func read() async throws -> ChangeLogProbeReading {
        if let reading = self.unchangedReading() { return reading }
        let runsNow = self.state.withLock { state in
            guard !state.running else { return false }
            state.running = true
            return true
        }
        let turn: Turn
        if runsNow {
            turn = .probe
        } else {
            turn = await withCheckedContinuation { (waiter: Waiter) in
                // The probe that ran may have ended since: then this caller runs the next.
                let runs = self.state.withLock { state in
                    guard state.running else {
                        state.running = true
                        return true
                    }
                    state.waiting.append(waiter)
                    return false
                }
                if runs { waiter.resume(returning: .probe) }
            }
        }
        switch turn {
        case .reading(let result): return try result.get()
        case .probe: return try await self.runProbe().get()
        }
    }

    /// The last probe's reading when the commit watch says nothing committed since its
    /// statement began, within ``watchRecheck`` of its check; nil otherwise.
    private func unchangedReading() -> ChangeLogProbeReading? {
        let now = ContinuousClock.now
        return self.state.withLock { state in
            guard let watch = state.watch, let mark = state.lastMark, let last = state.last, let checked = state.watchChecked,
                now - checked < Self.watchRecheck, watch.mark() == mark
            else { return nil }
            return last
        }
    }

    /// Whether a probe already saw a change at or after `since`: a sync read from there has
    /// rows or keys to answer, which no probe started later can spare it.
    func sawChange(since: Int64) -> Bool {
        self.state.withLock { ($0.last?.newest ?? 0) >= since }
    }

    /// Runs one probe for the caller and everyone waiting when it starts; then hands the next
    /// probe to the first caller that arrived meanwhile, if any, and answers the others.
    private func runProbe() async -> Result<ChangeLogProbeReading, any Error> {
        let batch = self.state.withLock { state in
            defer { state.waiting = [] }
            return state.waiting
        }
        let result: Result<ChangeLogProbeReading, any Error>
        var mark: CommitMark?
        do {
            let probed = try await self.probe()
            result = .success(probed.reading)
            mark = probed.mark
        } catch {
            result = .failure(error)
        }
        let next = self.state.withLock { state -> Waiter? in
            if case .success(let reading) = result {
                state.last = reading
                state.lastMark = mark
            }
            guard !state.waiting.isEmpty else {
                state.running = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume(returning: .probe)
        for waiter in batch { waiter.resume(returning: .reading(result)) }
        return result
    }

    /// One statement on the primary, as Spout's own role, outside any transaction; the lease is
    /// given back in the same hop to the database's thread. Before it, the commit watch's mark
    /// (the watch made by the first probe, while it still reads the database). A probe
    /// outlives its caller's cancellation: it answers others too.
    private func probe() async throws -> (reading: ChangeLogProbeReading, mark: CommitMark?) {
        try await self.database.withSession(DatabaseWork(readOnly: true, cancelsWithTask: false)) { session in
            try await session.runLast { connection in
                guard let log = connection as? any ChangeTracking else {
                    throw DatabaseError(.unsupported, message: "this database keeps no change log")
                }
                let mark = self.currentWatch(of: log)?.mark()
                return (try log.probeChangeLog(), mark)
            }
        }
    }

    /// The watch of the database's commits, checked to still read it (blocking, on the
    /// database's thread): made at the first probe, and dropped for good when it no longer
    /// reads the database; nil when the driver has none.
    private func currentWatch(of log: any ChangeTracking) -> (any CommitWatch)? {
        let (held, tried) = self.state.withLock { ($0.watch, $0.watchTried) }
        var watch = held
        if let held, !held.isCurrent() { watch = nil }
        if !tried { watch = log.commitWatch() }
        let checked = ContinuousClock.now
        self.state.withLock { state in
            // A mark of another watch says nothing of this one's.
            if watch !== state.watch { state.lastMark = nil }
            state.watch = watch
            state.watchTried = true
            state.watchChecked = checked
        }
        return watch
    }
}
