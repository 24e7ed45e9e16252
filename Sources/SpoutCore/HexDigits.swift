/// Lowercase hexadecimal digits as bytes: the one place that spells them (JSON's `\u00XX`
/// escapes, bytea's `\x` text, request ids, `traceresponse`'s flags).
public enum HexDigits {
    /// The digit for `nibble`, which is below 16.
    @inlinable @inline(__always)
    public static func digit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ (nibble &- 10)
    }
}
