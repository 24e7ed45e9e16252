import Synchronization

/// The source of the identifiers this server makes up: request ids (``RequestID``) and the
/// trace and span ids of ``RequestTrace``.
///
/// Each value is a process-wide counter run through a bijective 64-bit mix with a key drawn
/// once per process: distinct within the process (the mix is invertible and the counter does
/// not repeat before 2⁶⁴ draws), unrelated across processes, evenly spread over the bits, never
/// zero (W3C Trace Context forbids all-zero ids; the one counter value that would mix to zero
/// is skipped), and one atomic increment per value instead of a `getrandom` system call per id.
/// Not for secrets: the sequence is predictable to whoever learns the key.
struct IdentifierGenerator: RandomNumberGenerator {
    mutating func next() -> UInt64 {
        while true {
            let value = Self.mix(Self.counter.wrappingAdd(1, ordering: .relaxed).newValue &+ Self.key)
            if value != 0 { return value }
        }
    }

    /// The finalizer of SplitMix64: each step (xor-shift, multiply by an odd constant) is
    /// invertible, so distinct inputs give distinct outputs.
    static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    private static let key = UInt64.random(in: .min ... .max)
    private static let counter = Atomic<UInt64>(0)
}
