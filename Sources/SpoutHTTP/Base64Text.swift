/// Base64 text of a `bytes` argument (RFC 4648), the form Spout writes bytes in JSON.
///
/// Decoding accepts the standard alphabet (`+/`) and the URL-safe one (`-_`), with or without
/// `=` padding, since clients send both (a query string carries the URL-safe form unescaped).
/// Anything else is refused: whitespace, characters of neither alphabet, padding in the middle
/// or more than two `=`, and a length no encoder writes (one character past a group of four).
enum Base64Text {
    /// The bytes `text` encodes, or nil when it is not Base64.
    static func decode(_ text: String) -> [UInt8]? {
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
