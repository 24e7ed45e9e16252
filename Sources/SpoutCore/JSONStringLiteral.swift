/// Reads one JSON string literal out of bytes: the one decoder of `\` escapes for the scanners
/// that look into JSON without decoding it whole (a token's member names, a change log key).
public enum JSONStringLiteral {
    /// The text of the string literal whose opening quote is at `index`, with every escape
    /// decoded (`\u0075` is `u`, a surrogate pair one scalar, a lone surrogate U+FFFD); `index`
    /// then points past its closing quote. Nil when `index` is not at a quote or the literal
    /// does not end.
    public static func read(_ bytes: [UInt8], at index: inout Int) -> String? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        index += 1
        var scalars = String.UnicodeScalarView()
        var literal: [UInt8] = []
        var pendingHigh: UInt32?
        func flush() {
            scalars.append(contentsOf: String(decoding: literal, as: UTF8.self).unicodeScalars)
            literal.removeAll(keepingCapacity: true)
        }
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: "\"") {
                flush()
                return String(scalars)
            }
            guard byte == UInt8(ascii: "\\") else {
                literal.append(byte)
                continue
            }
            flush()
            guard index < bytes.count else { return nil }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "u"):
                guard index + 4 <= bytes.count, let unit = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16)
                else { return nil }
                index += 4
                if (0xD800...0xDBFF).contains(unit) {
                    pendingHigh = unit
                    continue
                }
                if let high = pendingHigh, (0xDC00...0xDFFF).contains(unit) {
                    scalars.append(Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00)) ?? "\u{FFFD}")
                } else {
                    scalars.append(Unicode.Scalar(unit) ?? "\u{FFFD}")
                }
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            default: scalars.append(Unicode.Scalar(escape))
            }
            pendingHigh = nil
        }
        return nil
    }
}
