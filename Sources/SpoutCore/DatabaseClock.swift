import Dispatch

/// The time a connection pool and read replicas go by: deadlines for lease waits, repeated
/// cancel requests, how long a failed replica stays set aside. Injectable, so the pool's rules
/// are tested on a clock the test moves (no real time passing).
///
/// Contract: ``now`` never decreases; ``schedule(after:_:)`` runs `action` once, on some
/// thread other than the caller's, no earlier than `delay` from now.
public protocol DatabaseClock: Sendable {
    /// Time since a fixed, arbitrary origin.
    var now: Duration { get }
    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void)
}

/// The real clock: `ContinuousClock` time, and Dispatch timers that run the actions on a
/// global queue (an action may block briefly: a cancel request is a round trip).
public struct SystemDatabaseClock: DatabaseClock {
    private static let origin = ContinuousClock.now

    public init() {}

    public var now: Duration { ContinuousClock.now - Self.origin }

    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) {
        let nanoseconds = max(0, delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds)), execute: action)
    }
}
