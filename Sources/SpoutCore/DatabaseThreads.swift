import Foundation

/// The threads a ``Database`` runs blocking work on: opening connections, statements, resets.
///
/// Contract:
/// - At most `maximum` threads, started on demand and kept; work waits in first-come order
///   when every thread is busy. ``Database`` sizes it to its connections plus one, so every
///   lease can run at once and a release never waits behind a stream.
/// - ``run(_:)`` never blocks its caller: it suspends until a thread has run `body`.
/// - After ``shutdown()`` work already queued still runs; new work is refused with
///   ``DatabaseError/Code/connectionFailed`` ("the database is closed") without running.
///   ``ended()`` returns once every thread has ended (its queued work run).
// @unchecked Sendable: every mutable field is read and written only while `condition` is
// locked (NSCondition is not marked Sendable, but it is a lock made for this use).
final class DatabaseThreads: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    /// Index of the next job in `jobs` (compacted when the queue empties).
    private var head = 0
    private var idle = 0
    private var started = 0
    private var isShutDown = false
    /// Set once shut down with no thread left (``ended()`` waits for it).
    private let allEnded = AsyncOneShotEvent()
    let maximum: Int
    private let name: String

    init(maximum: Int, name: String) {
        self.maximum = max(1, maximum)
        self.name = name
    }

    /// Runs `body` on one of the threads and returns its result; throws without running it
    /// after ``shutdown()``.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let accepted = self.submit { continuation.resume(with: Result { try body() }) }
            if !accepted { continuation.resume(throwing: DatabaseError(.connectionFailed, message: "the database is closed")) }
        }
    }

    /// Queues `job`; false after ``shutdown()``.
    ///
    /// An idle thread is signalled after the lock is released: signalled while it is held, the
    /// thread would wake only to wait for the lock, and the unlock would have to wake it again.
    /// A thread counted idle is inside `wait()`, so the signal still reaches one.
    private func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        self.condition.lock()
        guard !self.isShutDown else {
            self.condition.unlock()
            return false
        }
        self.jobs.append(job)
        // Each idle thread takes one queued job; start another only when they cannot take all.
        let startsThread = self.jobs.count - self.head > self.idle && self.started < self.maximum
        if startsThread { self.started += 1 }
        self.condition.unlock()
        if startsThread {
            SpoutThread.start(named: "db \(self.name)") { [self] in self.work() }
        } else {
            self.condition.signal()
        }
        return true
    }

    private func work() {
        self.condition.lock()
        while true {
            while self.head == self.jobs.count && !self.isShutDown {
                self.idle += 1
                self.condition.wait()
                self.idle -= 1
            }
            if self.head == self.jobs.count {
                // Shut down and nothing left to run.
                self.started -= 1
                let last = self.started == 0
                self.condition.unlock()
                if last { self.allEnded.set() }
                return
            }
            let job = self.jobs[self.head]
            self.head += 1
            if self.head == self.jobs.count {
                self.jobs.removeAll(keepingCapacity: true)
                self.head = 0
            }
            self.condition.unlock()
            job()
            self.condition.lock()
        }
    }

    /// Refuses new work; the threads end once the queued work has run.
    func shutdown() {
        self.condition.lock()
        self.isShutDown = true
        self.condition.broadcast()
        let none = self.started == 0
        self.condition.unlock()
        if none { self.allEnded.set() }
    }

    /// Returns once ``shutdown()`` was called and every thread has ended, the work queued
    /// before it run: nothing of the database runs on these threads any more.
    func ended() async {
        await self.allEnded.wait()
    }

    /// Jobs queued and not yet taken by a thread (for tests).
    var queuedCount: Int {
        self.condition.lock()
        defer { self.condition.unlock() }
        return self.jobs.count - self.head
    }

    /// Threads started and not ended (for tests).
    var threadCount: Int {
        self.condition.lock()
        defer { self.condition.unlock() }
        return self.started
    }
}
