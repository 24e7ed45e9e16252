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

/// Reads `read` until `done` holds for what it returned, and returns that reading; once
/// `limit` has passed, returns the last reading, for the test to state what it expected of it.
/// For what a test cannot be told of and another process makes visible later (a row in
/// `pg_stat_activity`, a log line, a counter): the limit only ends a broken run, it is never
/// what the test measures. The one deadline loop of the async tests.
public func poll<T>(
    within limit: Duration = .seconds(20), every interval: Duration = .milliseconds(20),
    _ read: () async throws -> T, until done: (T) throws -> Bool
) async throws -> T {
    let deadline = ContinuousClock.now + limit
    while true {
        let reading = try await read()
        if try done(reading) || ContinuousClock.now >= deadline { return reading }
        try await Task.sleep(for: interval)
    }
}

/// Polls `condition` (on a thread of its own: it may block) until it holds, and returns true;
/// false once `limit` has passed (``poll(within:every:_:until:)``).
public func eventually(
    within limit: Duration = .seconds(20), _ condition: @escaping @Sendable () throws -> Bool
) async throws -> Bool {
    try await poll(within: limit, { try await onThread(condition) }, until: { $0 })
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
