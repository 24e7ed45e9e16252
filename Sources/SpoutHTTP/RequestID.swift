import Synchronization

/// Request ids: the client's `X-Request-Id` when it is reasonable, else 16 hex digits.
///
/// Generated ids are a counter run through a bijective 64-bit mix with a key drawn once per
/// process: unique within the process, unrelated across processes, and one atomic increment
/// per request instead of a `getrandom` system call.
enum RequestID {
    static func make(from header: String?) -> String {
        if let header, !header.isEmpty, header.utf8.count <= 128,
            header.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        {
            return header
        }
        return Self.hex(Self.mix(Self.counter.wrappingAdd(1, ordering: .relaxed).newValue &+ Self.key))
    }

    /// The finalizer of SplitMix64: each step (xor-shift, multiply by an odd constant) is
    /// invertible, so distinct inputs give distinct outputs.
    static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// `value` as 16 lowercase hex digits.
    static func hex(_ value: UInt64) -> String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            let digits: StaticString = "0123456789abcdef"
            for position in 0..<16 {
                let nibble = Int((value >> UInt64(60 - 4 * position)) & 0xF)
                buffer[position] = digits.utf8Start[nibble]
            }
            return 16
        }
    }

    private static let key = UInt64.random(in: .min ... .max)
    private static let counter = Atomic<UInt64>(0)
}
