/// Request ids: the client's `X-Request-Id` when it is reasonable, else 16 random hex digits.
enum RequestID {
    static func make(from header: String?) -> String {
        if let header, !header.isEmpty, header.utf8.count <= 128,
            header.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        {
            return header
        }
        var generator = SystemRandomNumberGenerator()
        let value = generator.next() as UInt64
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
