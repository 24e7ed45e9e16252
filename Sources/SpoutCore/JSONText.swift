/// JSON scalars written straight into a ``ChunkedOutput``: escaped strings, numbers, dates.
///
/// Public so that a driver writing values straight from its own buffers (a
/// ``JSONWritingCursor``) writes exactly the bytes ``writeValue(_:dateFormat:to:)`` writes for
/// the same ``SQLValue``.
public enum JSONText {
    /// Writes `text` as a JSON string: quotes, backslashes and every control character escaped.
    /// Swift strings are valid UTF-8, so invalid input was already replaced by U+FFFD.
    public static func writeString(_ text: String, to out: inout ChunkedOutput) {
        var text = text
        text.withUTF8 { self.writeString(utf8: $0, to: &out) }
    }

    /// Writes the UTF-8 bytes `bytes` as a JSON string, escaped as ``writeString(_:to:)`` escapes.
    /// `bytes` must be valid UTF-8 (they are copied as they are).
    public static func writeString(utf8 bytes: UnsafeBufferPointer<UInt8>, to out: inout ChunkedOutput) {
        out.append(UInt8(ascii: "\""))
        var runStart = 0
        for index in 0..<bytes.count {
            let byte = bytes[index]
            guard self.needsEscape(byte) else { continue }
            if index > runStart { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index])) }
            runStart = index + 1
            out.append(UInt8(ascii: "\\"))
            if let letter = self.shortEscape(byte) {
                out.append(letter)
            } else {
                out.append("u00")
                out.append(HexDigits.digit(byte >> 4))
                out.append(HexDigits.digit(byte & 0xF))
            }
        }
        if runStart < bytes.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...])) }
        out.append(UInt8(ascii: "\""))
    }

    /// Appends `text` as a JSON string to `bytes`, escaped exactly as ``writeString(_:to:)``
    /// escapes it: for JSON built outside a ``ChunkedOutput`` (a log line, SQLite's array
    /// parameters).
    public static func appendString(_ text: some StringProtocol, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            guard self.needsEscape(byte) else {
                bytes.append(byte)
                continue
            }
            bytes.append(UInt8(ascii: "\\"))
            if let letter = self.shortEscape(byte) {
                bytes.append(letter)
            } else {
                bytes.append(contentsOf: "u00".utf8)
                bytes.append(HexDigits.digit(byte >> 4))
                bytes.append(HexDigits.digit(byte & 0xF))
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Whether a string's UTF-8 `byte` is escaped in JSON text: a quote, a backslash or a
    /// control character. The one rule both writers follow.
    @inline(__always)
    static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    /// The letter after the backslash for an escaped `byte` that has a short form (`n` for a
    /// line feed, `"` for a quote); nil for a control character written `\u00XX`.
    @inline(__always)
    static func shortEscape(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): byte
        case 0x0A: UInt8(ascii: "n")
        case 0x0D: UInt8(ascii: "r")
        case 0x09: UInt8(ascii: "t")
        case 0x08: UInt8(ascii: "b")
        case 0x0C: UInt8(ascii: "f")
        default: nil
        }
    }

    /// Writes a driver's text bytes, which may not be valid UTF-8, as a JSON string: exactly
    /// what ``writeString(_:to:)`` writes for `String(decoding: bytes, as: UTF8.self)` (invalid
    /// bytes become U+FFFD). ASCII, the common case, is copied without making a `String`.
    public static func writeString(unvalidatedUTF8 bytes: UnsafeBufferPointer<UInt8>, to out: inout ChunkedOutput) {
        if self.isASCII(bytes) {
            // ASCII is valid UTF-8: String(decoding:as:) would keep every byte.
            self.writeString(utf8: bytes, to: &out)
        } else {
            self.writeString(String(decoding: bytes, as: UTF8.self), to: &out)
        }
    }

    /// Whether every byte is below 0x80, eight bytes at a time.
    @inlinable @inline(__always)
    public static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let raw = UnsafeRawPointer(base)
        var offset = 0
        var bits: UInt64 = 0
        while offset + 8 <= bytes.count {
            bits |= raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            offset += 8
        }
        while offset < bytes.count {
            bits |= UInt64(base[offset])
            offset += 1
        }
        return bits & 0x8080_8080_8080_8080 == 0
    }

    /// Writes a signed integer in decimal, in place, without allocating.
    @inlinable @inline(__always)
    public static func writeInteger(_ value: Int64, to out: inout ChunkedOutput) {
        out.appendDecimal(value)
    }

    /// Writes a calendar day (days since 1970-01-01) in `dateFormat`: epoch milliseconds of
    /// its UTC midnight, or `"YYYY-MM-DD"`.
    @inlinable
    public static func writeDate(days: Int64, dateFormat: DateFormat, to out: inout ChunkedOutput) {
        switch dateFormat {
        case .epochMilliseconds:
            // 86,400,000 ms is 864 × 10⁵: a day other than the epoch's is its count times 864
            // followed by five zeros, the same digits as `days &* 86_400_000` with fewer
            // divisions (only where that product does not overflow).
            if days != 0 && days.magnitude < 100_000_000_000 {
                self.writeInteger(days &* 864, to: &out)
                out.append("00000")
            } else {
                self.writeInteger(days &* 86_400_000, to: &out)
            }
        case .iso8601: self.writeString(CivilTime.formatDate(days: days), to: &out)
        }
    }

    /// Writes a double as the shortest text that reads back as the same value; NaN and
    /// infinities (which JSON cannot express) as `null`.
    public static func writeDouble(_ value: Double, to out: inout ChunkedOutput) {
        guard value.isFinite else {
            out.append("null")
            return
        }
        if value == value.rounded(.towardZero) && abs(value) < 1e15 {
            // Integral values: "3.0" rather than Swift's "3.0" vs JavaScript's "3" ambiguity;
            // keep the decimal point so the reader still sees a float.
            self.writeInteger(Int64(value), to: &out)
            out.append(".0")
            return
        }
        out.append(contentsOf: value.description.utf8)
    }

    /// Writes an exact decimal's digits as stored; `NaN`/`Infinity` (not JSON) as `null`, and
    /// text that is not a JSON number as a string.
    static func writeDecimal(_ digits: String, to out: inout ChunkedOutput) {
        if self.isJSONNumber(digits) {
            out.append(contentsOf: digits.utf8)
        } else if digits == "NaN" || digits.hasSuffix("Infinity") {
            out.append("null")
        } else {
            self.writeString(digits, to: &out)
        }
    }

    /// Whether `text` matches JSON's number grammar.
    static func isJSONNumber(_ text: String) -> Bool {
        var iterator = text.utf8.makeIterator()
        var byte = iterator.next()
        func isDigit(_ b: UInt8?) -> Bool { b.map { $0 >= 0x30 && $0 <= 0x39 } ?? false }
        if byte == UInt8(ascii: "-") { byte = iterator.next() }
        guard isDigit(byte) else { return false }
        if byte == UInt8(ascii: "0") {
            byte = iterator.next()
        } else {
            while isDigit(byte) { byte = iterator.next() }
        }
        if byte == UInt8(ascii: ".") {
            byte = iterator.next()
            guard isDigit(byte) else { return false }
            while isDigit(byte) { byte = iterator.next() }
        }
        if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
            byte = iterator.next()
            if byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") { byte = iterator.next() }
            guard isDigit(byte) else { return false }
            while isDigit(byte) { byte = iterator.next() }
        }
        return byte == nil
    }

    private static let base64Alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Writes standard base64 (with padding) of `bytes`, unquoted.
    static func writeBase64(_ bytes: [UInt8], to out: inout ChunkedOutput) {
        var index = 0
        while index + 3 <= bytes.count {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out.append(self.base64Alphabet[Int(value >> 18 & 63)])
            out.append(self.base64Alphabet[Int(value >> 12 & 63)])
            out.append(self.base64Alphabet[Int(value >> 6 & 63)])
            out.append(self.base64Alphabet[Int(value & 63)])
            index += 3
        }
        let rest = bytes.count - index
        if rest > 0 {
            let value = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
            out.append(self.base64Alphabet[Int(value >> 18 & 63)])
            out.append(self.base64Alphabet[Int(value >> 12 & 63)])
            out.append(rest == 2 ? self.base64Alphabet[Int(value >> 6 & 63)] : UInt8(ascii: "="))
            out.append(UInt8(ascii: "="))
        }
    }

    /// Writes one value as JSON.
    public static func writeValue(_ value: SQLValue, dateFormat: DateFormat, to out: inout ChunkedOutput) {
        switch value {
        case .null: out.append("null")
        case .integer(let number): self.writeInteger(number, to: &out)
        case .double(let number): self.writeDouble(number, to: &out)
        case .decimal(let digits): self.writeDecimal(digits, to: &out)
        case .bool(let flag): flag ? out.append("true") : out.append("false")
        case .text(let text): self.writeString(text, to: &out)
        case .date(let days): self.writeDate(days: days, dateFormat: dateFormat, to: &out)
        case .timestamp(let micros):
            switch dateFormat {
            case .epochMilliseconds: self.writeInteger(CivilTime.floorDivide(micros, 1000), to: &out)
            case .iso8601: self.writeString(CivilTime.formatTimestamp(microseconds: micros), to: &out)
            }
        case .time(let text): self.writeString(text, to: &out)
        case .json(let text): out.append(contentsOf: text.utf8)
        case .bytes(let bytes):
            out.append(UInt8(ascii: "\""))
            self.writeBase64(bytes, to: &out)
            out.append(UInt8(ascii: "\""))
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                self.writeValue(element, dateFormat: dateFormat, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        }
    }
}
