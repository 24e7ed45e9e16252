/// Base64 text (RFC 4648): of a `bytes` argument, the form Spout writes bytes in JSON, and of
/// the tokens Spout seals (page and sync cursors), in the URL-safe alphabet without padding.
///
/// Decoding accepts the standard alphabet (`+/`) and the URL-safe one (`-_`), with or without
/// `=` padding, since clients send both (a query string carries the URL-safe form unescaped).
/// Anything else is refused: whitespace, characters of neither alphabet, padding in the middle
/// or more than two `=`, and a length no encoder writes (one character past a group of four).
public enum Base64Text {
    /// `bytes` in the URL-safe alphabet (`-_`), without padding: text that stands in a query
    /// string unescaped.
    public static func urlSafe(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            output.append(Self.urlSafeCharacter(group >> 18))
            output.append(Self.urlSafeCharacter(group >> 12))
            output.append(Self.urlSafeCharacter(group >> 6))
            output.append(Self.urlSafeCharacter(group))
            index += 3
        }
        let rest = bytes.count - index
        if rest > 0 {
            let group = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
            output.append(Self.urlSafeCharacter(group >> 18))
            output.append(Self.urlSafeCharacter(group >> 12))
            if rest == 2 { output.append(Self.urlSafeCharacter(group >> 6)) }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The URL-safe alphabet's character for the low six bits of `bits`.
    private static func urlSafeCharacter(_ bits: UInt32) -> UInt8 {
        let value = UInt8(truncatingIfNeeded: bits & 0x3F)
        switch value {
        case 0..<26: return UInt8(ascii: "A") + value
        case 26..<52: return UInt8(ascii: "a") + value - 26
        case 52..<62: return UInt8(ascii: "0") + value - 52
        case 62: return UInt8(ascii: "-")
        default: return UInt8(ascii: "_")
        }
    }

    /// The bytes `text` encodes, or nil when it is not Base64.
    public static func decode(_ text: String) -> [UInt8]? {
        var input = Array(text.utf8)
        var padding = 0
        while input.last == UInt8(ascii: "=") {
            input.removeLast()
            padding += 1
        }
        guard padding <= 2, padding == 0 || (input.count + padding) % 4 == 0, input.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(input.count / 4 * 3 + 2)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in input {
            guard let value = Self.value(of: character) else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return output
    }

    /// The six bits `character` stands for in either alphabet.
    private static func value(of character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"), UInt8(ascii: "-"): return 62
        case UInt8(ascii: "/"), UInt8(ascii: "_"): return 63
        default: return nil
        }
    }
}
