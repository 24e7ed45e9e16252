/// The rules that give a token one spelling: base64url as RFC 7515 writes it, JSON without
/// repeated member names, and an ECDSA signature in its low-S form.
///
/// Contract: each function reads only the text it is given and decides without a key, so the
/// verifier can refuse a token (or pick the spelling it remembers it by) before any signature
/// check.
enum TokenText {
    /// The bytes of base64url text, nil when it is not base64url. With `canonical`, only the
    /// one spelling RFC 7515 allows decodes: no padding, no other alphabet, no length that
    /// cannot end a group, and zero bits after the last byte (`eA` and `eB` are both "x" to a
    /// lenient decoder; only `eA` is canonical).
    static func decoded(_ text: Substring, canonical: Bool = true) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        var count = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: "=") && !canonical { break }
            guard let value = Self.sextet(byte) else { return nil }
            accumulator = (accumulator << 6) | UInt32(value)
            bits += 6
            count += 1
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        if count % 4 == 1 { return nil }
        if canonical && accumulator != 0 { return nil }
        return bytes
    }

    private static func sextet(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }

    // MARK: ECDSA signatures

    /// The order of P-256 (ES256) and of P-384 (ES384), big-endian.
    private static let curveOrders: [Int: [UInt8]] = [
        32: Self.hexBytes("FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551"),
        48: Self.hexBytes(
            "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFC7634D81F4372DDF581A0DB248B0A77AECEC196ACCC52973"),
    ]

    /// The low-S twin of an ES256 or ES384 signature (`r || s`, 64 or 96 bytes): (r, n − s)
    /// verifies whenever (r, s) does, so a token has two valid spellings; this is the one with
    /// s ≤ n/2. Nil when `signature` has neither size or is already low-S.
    static func lowS(_ signature: [UInt8]) -> [UInt8]? {
        let half = signature.count / 2
        guard let order = Self.curveOrders[half] else { return nil }
        let s = Array(signature[half...])
        let complement = Self.subtract(s, from: order)
        // s > n − s exactly when s > n/2.
        guard s.lexicographicallyPrecedes(complement) == false, s != complement else { return nil }
        return Array(signature[..<half]) + complement
    }

    /// `minuend − subtrahend`, both big-endian of one length, `minuend` the larger.
    private static func subtract(_ subtrahend: [UInt8], from minuend: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: minuend.count)
        var borrow = 0
        for index in stride(from: minuend.count - 1, through: 0, by: -1) {
            var difference = Int(minuend[index]) - Int(subtrahend[index]) - borrow
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += 256 }
            result[index] = UInt8(difference)
        }
        return result
    }

    private static func hexBytes(_ hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var high: UInt8?
        for character in hex.utf8 {
            let nibble = character <= UInt8(ascii: "9") ? character - UInt8(ascii: "0") : character - UInt8(ascii: "A") + 10
            if let value = high {
                bytes.append(value << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return bytes
    }
}
