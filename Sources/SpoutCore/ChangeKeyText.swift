/// A changed row's key as the change log stores it: a JSON array of scalars (`[10004]`,
/// `["Rex"]`, `["d005", "1999-01-01"]`), read back into values to bind.
///
/// Contract: integers become ``SQLValue/integer(_:)``, other numbers ``SQLValue/decimal(_:)``
/// (their text, never rounded), strings ``SQLValue/text(_:)``, `true`/`false`
/// ``SQLValue/bool(_:)`` and `null` ``SQLValue/null``; anything else (an object, a nested
/// array, text that is not JSON) is nil. The database compares each with the key column,
/// converting text to the column's type (a date's `1999-01-01`).
public enum ChangeKeyText {
    public static func values(_ text: String) -> [SQLValue]? {
        var scanner = Scanner(bytes: Array(text.utf8))
        return scanner.array()
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        mutating func array() -> [SQLValue]? {
            self.skipBlanks()
            guard self.consume(UInt8(ascii: "[")) else { return nil }
            var values: [SQLValue] = []
            self.skipBlanks()
            if self.consume(UInt8(ascii: "]")) { return self.atEnd ? values : nil }
            while true {
                self.skipBlanks()
                guard let value = self.scalar() else { return nil }
                values.append(value)
                self.skipBlanks()
                if self.consume(UInt8(ascii: "]")) { return self.atEnd ? values : nil }
                guard self.consume(UInt8(ascii: ",")) else { return nil }
            }
        }

        var atEnd: Bool {
            var probe = self
            probe.skipBlanks()
            return probe.index == probe.bytes.count
        }

        mutating func scalar() -> SQLValue? {
            guard self.index < self.bytes.count else { return nil }
            switch self.bytes[self.index] {
            case UInt8(ascii: "\""): return self.string().map(SQLValue.text)
            case UInt8(ascii: "t"): return self.literal("true") ? .bool(true) : nil
            case UInt8(ascii: "f"): return self.literal("false") ? .bool(false) : nil
            case UInt8(ascii: "n"): return self.literal("null") ? .null : nil
            default: return self.number()
            }
        }

        mutating func number() -> SQLValue? {
            let start = self.index
            while self.index < self.bytes.count,
                "-+.eE0123456789".utf8.contains(self.bytes[self.index])
            {
                self.index += 1
            }
            guard self.index > start else { return nil }
            let text = String(decoding: self.bytes[start..<self.index], as: UTF8.self)
            if let integer = Int64(text) { return .integer(integer) }
            guard Double(text) != nil else { return nil }
            return .decimal(text)
        }

        mutating func string() -> String? {
            JSONStringLiteral.read(self.bytes, at: &self.index)
        }

        mutating func literal(_ word: String) -> Bool {
            let expected = Array(word.utf8)
            guard self.index + expected.count <= self.bytes.count, Array(self.bytes[self.index..<self.index + expected.count]) == expected
            else { return false }
            self.index += expected.count
            return true
        }

        mutating func consume(_ byte: UInt8) -> Bool {
            guard self.index < self.bytes.count, self.bytes[self.index] == byte else { return false }
            self.index += 1
            return true
        }

        mutating func skipBlanks() {
            while self.index < self.bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(self.bytes[self.index]) { self.index += 1 }
        }
    }
}
