import Foundation

/// Runs blocking work (sockets, child processes, libpq) on a thread of its own and awaits its
/// result, so that no thread of Swift's cooperative pool blocks: the one way tests do so.
public func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Swift.Result { try body() }) }
        thread.stackSize = 1 << 20
        thread.start()
    }
}

/// Polls `condition` (on a thread of its own: it may block) until it holds, and returns true;
/// false once `limit` has passed. For events a test cannot be told of (a row in
/// `pg_stat_activity`, a counter): the limit only ends a broken run, it is never what the test
/// measures.
public func eventually(
    within limit: Duration = .seconds(20), _ condition: @escaping @Sendable () throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + limit
    while true {
        if try await onThread(condition) { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(20))
    }
}

/// The blocking twin of ``eventually(within:_:)``, for code already on a thread of its own (or
/// driving an `EmbeddedChannel`): runs `step`, then checks `condition`, until it holds; throws
/// ``TimedOut`` naming `what` once `limit` has passed.
public func waitUntil(
    _ what: String, within limit: Duration = .seconds(20), step: () throws -> Void = {}, _ condition: () throws -> Bool
) throws {
    let deadline = ContinuousClock.now + limit
    while true {
        try step()
        if try condition() { return }
        guard ContinuousClock.now < deadline else { throw TimedOut(what: what) }
        usleep(2_000)
    }
}

/// ``waitUntil(_:within:step:_:)`` gave up.
public struct TimedOut: Error, CustomStringConvertible {
    public var what: String
    public var description: String { "timed out waiting until \(self.what)" }
}
