/// Lowercase hexadecimal digits as bytes: the one place in the HTTP layer that spells them
/// (request ids, `traceresponse`'s flags, a log line's `\u00XX` escapes).
enum HexDigits {
    /// The digit for `nibble`, which is below 16.
    @inline(__always)
    static func digit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ (nibble &- 10)
    }
}
