/// Comparisons whose running time does not depend on where two byte strings differ.
///
/// Contract: ``equals(_:_:)`` reads every byte of a buffer of ``width(_:_:)`` bytes for both
/// operands, folds the differences with `|`, and decides only after the loop; it never returns
/// early, not even when the lengths differ (the shorter operand is padded with zeros and the
/// length difference is folded in too). Its time therefore depends on the lengths only through
/// that width, which is a fixed ``minimumWidth`` for every operand up to that size.
public enum ConstantTime {
    /// The smallest buffer compared: secrets up to this many bytes all take the same time.
    public static let minimumWidth = 256

    /// Whether `a` and `b` hold the same bytes, compared in constant time (see the type).
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        self.difference(a, b) == 0
    }

    /// 0 when `a` and `b` are equal, anything else when they differ; computed over the full
    /// width without an early exit.
    static func difference(_ a: [UInt8], _ b: [UInt8]) -> UInt {
        let width = self.width(a, b)
        let left = self.padded(a, to: width)
        let right = self.padded(b, to: width)
        var folded: UInt8 = 0
        for index in 0..<width {
            folded |= left[index] ^ right[index]
        }
        return UInt(folded) | UInt(bitPattern: a.count ^ b.count)
    }

    /// The number of bytes compared for operands of these lengths.
    static func width(_ a: [UInt8], _ b: [UInt8]) -> Int {
        max(self.minimumWidth, a.count, b.count)
    }

    private static func padded(_ bytes: [UInt8], to width: Int) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: width)
        buffer.replaceSubrange(0..<bytes.count, with: bytes)
        return buffer
    }
}
