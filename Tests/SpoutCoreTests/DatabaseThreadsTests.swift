@testable import SpoutCore
import Testing

/// ``DatabaseThreads``: every job runs, on at most the threads it was sized to, and none after
/// shutdown.
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
}
