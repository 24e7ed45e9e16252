/// Writes unsigned integers in decimal into raw memory, four digits to a group.
///
/// A number is cut into groups of at most eight digits (one 64-bit division by 10⁸ per cut),
/// each group into two halves of four digits, each half into two pairs of digits read from a
/// table. Every division after the first cut is a 32-bit one by a constant, and the groups'
/// divisions do not wait on each other, so the processor overlaps them — unlike a loop that
/// peels two digits at a time, where each division waits on the previous one.
///
/// Contract: the bytes written are exactly `String(value)`'s, with no leading zero except for
/// 0 itself; each function returns the address just past the last digit written. The caller
/// provides room for 20 bytes. `ChunkedOutputTests` checks every digit count and its
/// boundaries against `String`.
@usableFromInline
enum DecimalDigits {
    /// Writes `value` in decimal at `start`.
    @inlinable @inline(__always)
    static func write(_ value: UInt64, at start: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
        if value < 100_000_000 {
            return self.writeUpTo8(UInt32(truncatingIfNeeded: value), at: start)
        }
        let high = value / 100_000_000
        let low = UInt32(truncatingIfNeeded: value &- high &* 100_000_000)
        var end: UnsafeMutablePointer<UInt8>
        if high < 100_000_000 {
            end = self.writeUpTo8(UInt32(truncatingIfNeeded: high), at: start)
        } else {
            // 17 to 20 digits: at most 1,844 above the lower sixteen.
            let top = high / 100_000_000
            end = self.writeUpTo4(UInt32(truncatingIfNeeded: top), at: start)
            self.writeExactly8(UInt32(truncatingIfNeeded: high &- top &* 100_000_000), at: end)
            end += 8
        }
        self.writeExactly8(low, at: end)
        return end + 8
    }

    /// Writes `value` (below 10⁸) without leading zeros.
    @inlinable @inline(__always)
    static func writeUpTo8(_ value: UInt32, at start: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
        if value < 10_000 { return self.writeUpTo4(value, at: start) }
        let high = value / 10_000
        let end = self.writeUpTo4(high, at: start)
        self.writeExactly4(value &- high &* 10_000, at: end)
        return end + 4
    }

    /// Writes `value` (below 10⁴) without leading zeros.
    @inlinable @inline(__always)
    static func writeUpTo4(_ value: UInt32, at start: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
        if value < 100 {
            if value < 10 {
                start.pointee = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value)
                return start + 1
            }
            self.writePair(value, at: start)
            return start + 2
        }
        let high = value / 100
        let low = value &- high &* 100
        if high < 10 {
            start.pointee = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: high)
            self.writePair(low, at: start + 1)
            return start + 3
        }
        self.writePair(high, at: start)
        self.writePair(low, at: start + 2)
        return start + 4
    }

    /// Writes `value` (below 10⁸) as eight digits, with leading zeros.
    @inlinable @inline(__always)
    static func writeExactly8(_ value: UInt32, at start: UnsafeMutablePointer<UInt8>) {
        let high = value / 10_000
        self.writeExactly4(high, at: start)
        self.writeExactly4(value &- high &* 10_000, at: start + 4)
    }

    /// Writes `value` (below 10⁴) as four digits, with leading zeros.
    @inlinable @inline(__always)
    static func writeExactly4(_ value: UInt32, at start: UnsafeMutablePointer<UInt8>) {
        let high = value / 100
        self.writePair(high, at: start)
        self.writePair(value &- high &* 100, at: start + 2)
    }

    /// Writes `value` (below 100) as two digits, one 16-bit load and store.
    @inlinable @inline(__always)
    static func writePair(_ value: UInt32, at start: UnsafeMutablePointer<UInt8>) {
        // "00" through "99": a constant in the binary, read without any lazy initialization.
        let pairs: StaticString = """
            00010203040506070809101112131415161718192021222324252627282930313233343536373839\
            40414243444546474849505152535455565758596061626364656667686970717273747576777879\
            8081828384858687888990919293949596979899
            """
        let pair = UnsafeRawPointer(pairs.utf8Start).loadUnaligned(fromByteOffset: Int(value) &* 2, as: UInt16.self)
        UnsafeMutableRawPointer(start).storeBytes(of: pair, as: UInt16.self)
    }
}
