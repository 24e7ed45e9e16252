#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An instant of the system's monotonic clock (`CLOCK_MONOTONIC`), in nanoseconds: what the
/// driver's statement deadlines are measured in.
///
/// A plain integer rather than `ContinuousClock.Instant`, whose layout is resilient: a cursor
/// hands its deadline to every `sqlite3_step` and, for a streamed result, reads the clock
/// around each one, and each copy or comparison of a resilient value goes through its type's
/// metadata, which cost more than the step's own bookkeeping. Only differences and comparisons
/// between two such instants mean anything.
struct MonotonicInstant: Comparable, Sendable {
    var nanoseconds: Int64

    /// The current instant.
    static var now: MonotonicInstant {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return MonotonicInstant(nanoseconds: Int64(time.tv_sec) &* 1_000_000_000 &+ Int64(time.tv_nsec))
    }

    static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    /// The instant `duration` after `instant` (whole nanoseconds; saturating).
    static func + (instant: MonotonicInstant, duration: Duration) -> MonotonicInstant {
        let (sum, overflow) = instant.nanoseconds.addingReportingOverflow(Self.nanoseconds(of: duration))
        return MonotonicInstant(nanoseconds: overflow ? (duration < .zero ? .min : .max) : sum)
    }

    /// The time from `rhs` to `lhs`.
    static func - (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Duration {
        .nanoseconds(lhs.nanoseconds &- rhs.nanoseconds)
    }

    /// `duration` in whole nanoseconds, saturating at the bounds of `Int64` (about 292 years).
    static func nanoseconds(of duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (total, sumOverflow) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow || sumOverflow { return seconds < 0 ? .min : .max }
        return total
    }
}
