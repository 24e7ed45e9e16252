import SpoutCore

/// Request ids: the client's `X-Request-Id` when it is reasonable, else 16 hex digits from
/// ``IdentifierGenerator`` (unique within the process, no system call).
enum RequestID {
    static func make(from header: String?) -> String {
        if let header, !header.isEmpty, header.utf8.count <= 128,
            header.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        {
            return header
        }
        var generator = IdentifierGenerator()
        return Self.hex(generator.next())
    }

    /// `value` as 16 lowercase hex digits.
    static func hex(_ value: UInt64) -> String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            for position in 0..<16 {
                buffer[position] = HexDigits.digit(UInt8(truncatingIfNeeded: value >> UInt64(60 - 4 * position)) & 0xF)
            }
            return 16
        }
    }
}
