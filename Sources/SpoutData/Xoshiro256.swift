/// xoshiro256** (Blackman and Vigna), seeded through SplitMix64: a small, fast generator whose
/// output depends only on the seed, on every platform and Swift version (unlike the standard
/// library's random APIs, whose algorithms may change). Not for cryptography.
struct Xoshiro256: Sendable {
    private var s0: UInt64
    private var s1: UInt64
    private var s2: UInt64
    private var s3: UInt64

    init(seed: UInt64) {
        var splitMix = seed
        func nextSplitMix() -> UInt64 {
            splitMix &+= 0x9E37_79B9_7F4A_7C15
            var z = splitMix
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        self.s0 = nextSplitMix()
        self.s1 = nextSplitMix()
        self.s2 = nextSplitMix()
        self.s3 = nextSplitMix()
    }

    @inline(__always)
    mutating func next() -> UInt64 {
        let result = (self.s1 &* 5).rotatedLeft(by: 7) &* 9
        let t = self.s1 << 17
        self.s2 ^= self.s0
        self.s3 ^= self.s1
        self.s1 ^= self.s2
        self.s0 ^= self.s3
        self.s2 ^= t
        self.s3 = self.s3.rotatedLeft(by: 45)
        return result
    }

    /// A number in `0..<bound` (`bound` > 0), by multiply-high (bias below 2^-32 for the
    /// bounds used here).
    @inline(__always)
    mutating func below(_ bound: Int) -> Int {
        Int(UInt64(bound).multipliedFullWidth(by: self.next()).high)
    }

    /// A number in `range`.
    @inline(__always)
    mutating func inRange(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + self.below(range.upperBound - range.lowerBound + 1)
    }

    /// A number in `0.0..<1.0` with 53 random bits.
    @inline(__always)
    mutating func unit() -> Double {
        Double(self.next() >> 11) * 0x1.0p-53
    }

    /// True with probability `probability`.
    @inline(__always)
    mutating func chance(_ probability: Double) -> Bool {
        self.unit() < probability
    }

    /// An index into `weights`, each chosen with probability proportional to its weight.
    mutating func weighted(_ weights: [Int], total: Int) -> Int {
        var pick = self.below(total)
        for (index, weight) in weights.enumerated() {
            if pick < weight { return index }
            pick -= weight
        }
        return weights.count - 1
    }
}

extension UInt64 {
    @inline(__always)
    fileprivate func rotatedLeft(by count: UInt64) -> UInt64 {
        (self << count) | (self >> (64 - count))
    }
}
