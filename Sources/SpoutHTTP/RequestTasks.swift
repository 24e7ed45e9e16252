import Synchronization

/// The request tasks a server started and has not seen end.
///
/// A request's task runs on its connection's event loop (its executor preference) and can
/// outlive the connection: a stream's producer finishes its statement on a database thread
/// after the channel closed, then the task resumes on the loop. Shutdown therefore waits for
/// these tasks before it stops the event loops; a task resuming onto a stopped loop would be
/// dropped (NIO logs it, and says a later version will crash there), and never end.
///
/// Contract: ``started()`` before a task is created, ``ended()`` once as its last step;
/// ``waitUntilNone(atMost:)`` returns true once none is running, false when `timeout` passed
/// first.
final class RequestTasks: Sendable {
    private let count = Atomic<Int>(0)

    init() {}

    func started() {
        self.count.add(1, ordering: .relaxed)
    }

    func ended() {
        self.count.subtract(1, ordering: .releasing)
    }

    var running: Int {
        self.count.load(ordering: .acquiring)
    }

    /// Checks every 5 ms: only a shutdown waits, once.
    func waitUntilNone(atMost timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while self.running > 0 {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }
}
