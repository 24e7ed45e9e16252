import SpoutCore
import Synchronization

/// Where the change log of one database stands, read once for every sync read waiting
/// (``SpoutCore/ChangeTracking/probeChangeLog()``): what answers a sync read after no change
/// without a database session of its own.
///
/// Contract: ``read()`` returns the reading of a probe that *started after it was called*, so
/// a change committed before the call (by any instance: the probe reads the primary) is among
/// what the reading saw. One probe runs at a time; the callers that arrive while it runs wait
/// for the next, which then answers all of them: a burst of sync reads costs a statement per
/// probe, not per read, and each waits at most two probes.
///
/// A class behind a lock: one value shared by every handler of the database, and by the task
/// that runs the probes.
final class ChangeLogProbe: Sendable {
    typealias Waiter = CheckedContinuation<Result<ChangeLogProbeReading, any Error>, Never>

    /// Whether a probe runs, and who waits for the next one.
    private struct State {
        var running = false
        var waiting: [Waiter] = []
        /// The last probe's reading.
        var last: ChangeLogProbeReading?
    }

    let database: Database
    private let state = Mutex(State())

    init(database: Database) {
        self.database = database
    }

    /// The reading of a probe started after this call; throws what the probe threw (the
    /// database's error, unanswered).
    func read() async throws -> ChangeLogProbeReading {
        let result = await withCheckedContinuation { (waiter: Waiter) in
            let starts = self.state.withLock { state in
                state.waiting.append(waiter)
                guard !state.running else { return false }
                state.running = true
                return true
            }
            if starts { Task { await self.run() } }
        }
        return try result.get()
    }

    /// Whether a probe already saw a change at or after `since`: a sync read from there has
    /// rows or keys to answer, which no probe started later can spare it.
    func sawChange(since: Int64) -> Bool {
        self.state.withLock { ($0.last?.newest ?? 0) >= since }
    }

    /// Runs probes while anyone waits: each takes the callers waiting when it starts.
    private func run() async {
        while true {
            let batch = self.state.withLock { state in
                let batch = state.waiting
                state.waiting = []
                if batch.isEmpty { state.running = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            let result: Result<ChangeLogProbeReading, any Error>
            do {
                result = .success(try await self.probe())
            } catch {
                result = .failure(error)
            }
            if case .success(let reading) = result { self.state.withLock { $0.last = reading } }
            for waiter in batch { waiter.resume(returning: result) }
        }
    }

    /// One statement on the primary, as Spout's own role, outside any transaction.
    private func probe() async throws -> ChangeLogProbeReading {
        try await self.database.withSession(DatabaseWork(readOnly: true)) { session in
            try await session.run { connection in
                guard let log = connection as? any ChangeTracking else {
                    throw DatabaseError(.unsupported, message: "this database keeps no change log")
                }
                return try log.probeChangeLog()
            }
        }
    }
}
