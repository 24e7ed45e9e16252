@testable import SpoutCore
import Testing

/// ``DatabaseThreads``: every job runs, on at most the threads it was sized to, and none after
/// shutdown; ``DatabaseThreads/ended()`` waits for the jobs queued before it.
@Suite struct DatabaseThreadsTests {
    @Test func everyJobRunsOnAtMostTheMaximumThreads() async throws {
        let threads = DatabaseThreads(maximum: 3, name: "test")
        defer { threads.shutdown() }
        let total = try await withThrowingTaskGroup(of: Int.self) { group in
            for job in 0..<2000 {
                group.addTask { try await threads.run { job } }
            }
            return try await group.reduce(0, +)
        }
        #expect(total == (0..<2000).reduce(0, +))
        #expect(threads.threadCount <= 3)
    }

    /// Each job finds the threads idle, so each submission wakes one that waits (the signal
    /// sent after the queue's lock is released): a wake-up lost on the way hangs this test.
    @Test(.timeLimit(.minutes(1))) func jobsOneAfterAnotherEachWakeAnIdleThread() async throws {
        let threads = DatabaseThreads(maximum: 2, name: "test")
        defer { threads.shutdown() }
        var total = 0
        for job in 0..<5000 {
            total += try await threads.run { job }
        }
        #expect(total == (0..<5000).reduce(0, +))
        #expect(threads.threadCount <= 2)
    }

    @Test func aBlockedThreadDoesNotHoldBackWorkWhileAnotherMayStart() async throws {
        let threads = DatabaseThreads(maximum: 2, name: "test")
        defer { threads.shutdown() }
        let gate = Recorder<Void>()
        let blocked = Task {
            try await threads.run {
                while gate.values.isEmpty {}
            }
        }
        // The second thread takes this while the first one blocks.
        #expect(try await threads.run { 7 } == 7)
        gate.append(())
        try await blocked.value
    }

    @Test func workAfterShutdownIsRefusedWithoutRunning() async throws {
        let threads = DatabaseThreads(maximum: 1, name: "test")
        threads.shutdown()
        let ran = Recorder<Void>()
        await #expect(throws: DatabaseError.self) { try await threads.run { ran.append(()) } }
        #expect(ran.values.isEmpty)
    }

    @Test func endedWaitsForTheWorkQueuedBeforeTheShutdown() async throws {
        let threads = DatabaseThreads(maximum: 1, name: "test")
        let gate = Recorder<Void>()
        let finished = Recorder<Int>()
        let running = Recorder<Void>()
        let first = Task {
            try await threads.run {
                running.append(())
                while gate.values.isEmpty {}
                finished.append(1)
            }
        }
        while running.values.isEmpty { await Task.yield() }
        let second = Task { try await threads.run { finished.append(2) } }
        while threads.queuedCount == 0 { await Task.yield() }
        threads.shutdown()
        let ended = Task {
            await threads.ended()
            return finished.values
        }
        try await Task.sleep(for: .milliseconds(50))
        gate.append(())
        // Both jobs ran (the second was queued before the shutdown) before `ended` returned.
        #expect(await ended.value.sorted() == [1, 2])
        try await first.value
        try await second.value
        #expect(threads.threadCount == 0)
        await threads.ended()
    }

    @Test func endedReturnsWhenNoThreadWasEverStarted() async {
        let threads = DatabaseThreads(maximum: 2, name: "test")
        let ended = Task { await threads.ended() }
        threads.shutdown()
        await ended.value
        #expect(threads.threadCount == 0)
    }
}
