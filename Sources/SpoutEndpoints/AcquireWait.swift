import SpoutCore
import Synchronization

/// Keeps how long the response's last lease waited, for `Server-Timing` (the databases'
/// metrics hear it from the database's own observer), and records the `acquire` span and a
/// cancel when the request is traced.
final class AcquireWait: DatabaseObserver {
    private let waited = Mutex<Duration>(.zero)
    private let spans: DatabaseSpans?
    /// When the first lease was asked for (a timed-out wait's span starts here).
    private let created = ContinuousClock.now

    init(spans: DatabaseSpans?) {
        self.spans = spans
    }

    /// How long the last lease waited.
    var acquire: Duration { self.waited.withLock { $0 } }

    func connectionAcquired(database: String, after wait: Duration) {
        self.waited.withLock { $0 = wait }
        if let spans = self.spans {
            let now = ContinuousClock.now
            spans.record("acquire", from: now - wait, to: now, attributes: ["spout.database": .string(database)])
        }
    }

    func acquireTimedOut(database: String) {
        self.spans?.record(
            "acquire", from: self.created, to: .now, attributes: ["spout.database": .string(database)],
            error: DatabaseError(.poolExhausted))
    }

    func statementCancelled() {
        self.spans?.request.event("statement cancelled")
    }
}
