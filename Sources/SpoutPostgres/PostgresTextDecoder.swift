import SpoutCore

/// Turns the text output of a PostgreSQL value (as `PQgetvalue` returns it) into a ``SQLValue``.
///
/// Numbers, booleans, dates and timestamps are parsed straight from the bytes, without an
/// intermediate `String`. The session settings of ``PostgresConnection`` are assumed:
/// `DateStyle = 'ISO, YMD'`, `TimeZone = 'UTC'` (so `timestamptz` prints `+00`),
/// `extra_float_digits = 1` (shortest exact floats) and `bytea_output = 'hex'`.
///
/// Values that cannot be represented are mapped as follows (callers may rely on it):
/// - `date` and `timestamp` values `infinity` / `-infinity`, and timestamps outside the range
///   of ``SQLValue/timestamp(microseconds:)``, become `.null`. BC dates and years past 9999
///   are converted (proleptic Gregorian, `0001 BC` is year 0).
/// - Text that is not valid UTF-8 has its bad bytes replaced by U+FFFD.
/// - A value that does not parse as its type (which PostgreSQL never sends) falls back to
///   `.text` with the raw text, so nothing is lost silently.
enum PostgresTextDecoder {
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>, as kind: PostgresScalarKind) -> SQLValue {
        switch kind {
        case .integer:
            if let value = self.parseInteger(bytes) { return .integer(value) }
        case .double:
            if let value = self.parseDouble(bytes) { return .double(value) }
        case .decimal:
            return .decimal(self.string(bytes))
        case .bool:
            if bytes.count == 1 {
                if bytes[0] == UInt8(ascii: "t") { return .bool(true) }
                if bytes[0] == UInt8(ascii: "f") { return .bool(false) }
            }
        case .text:
            return .text(self.string(bytes))
        case .date:
            if let days = CivilTime.parseDate(bytes) { return .date(days: days) }
            if let days = self.parseExtendedDate(bytes) { return days.map { .date(days: $0) } ?? .null }
        case .timestamp:
            if let micros = CivilTime.parseTimestamp(bytes) { return .timestamp(microseconds: micros) }
            if let micros = self.parseExtendedTimestamp(bytes) { return micros.map { .timestamp(microseconds: $0) } ?? .null }
        case .time:
            return .time(self.string(bytes))
        case .json:
            return .json(self.string(bytes))
        case .bytes:
            if let value = self.parseBytea(bytes) { return .bytes(value) }
        }
        return .text(self.string(bytes))
    }

    @inline(__always)
    static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)
    }

    // MARK: Numbers

    /// Whether `bytes` is an integer as PostgreSQL writes one, within 18 digits: an optional
    /// `-`, then digits without a leading zero (`0` alone). Such text is already what
    /// ``JSONText/writeInteger(_:to:)`` writes for its value, so a row writer may copy it.
    @inline(__always)
    static func isCanonicalInteger(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        if bytes.count > 1 && bytes[0] == UInt8(ascii: "-") { index = 1 }
        let digits = bytes.count &- index
        guard digits >= 1, digits <= 18 else { return false }
        if digits > 1 && bytes[index] == UInt8(ascii: "0") { return false }
        if index == 1 && digits == 1 && bytes[1] == UInt8(ascii: "0") { return false }
        while index < bytes.count {
            guard bytes[index] &- UInt8(ascii: "0") < 10 else { return false }
            index &+= 1
        }
        return true
    }

    /// `[-+]digits` into an `Int64`, or nil (also on overflow).
    static func parseInteger(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        var index = 0
        var negative = false
        if index < bytes.count && (bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+")) {
            negative = bytes[index] == UInt8(ascii: "-")
            index += 1
        }
        guard index < bytes.count else { return nil }
        // Accumulate negatively so that Int64.min parses.
        var value: Int64 = 0
        while index < bytes.count {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = shifted.subtractingReportingOverflow(Int64(digit))
            guard !overflow1, !overflow2 else { return nil }
            value = next
            index += 1
        }
        if negative { return value }
        let (positive, overflow) = Int64(0).subtractingReportingOverflow(value)
        return overflow ? nil : positive
    }

    private static let exactPowersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    /// A float8/float4 text (`1.5`, `-2e-05`, `NaN`, `Infinity`, `-Infinity`) into a `Double`.
    ///
    /// Short decimals take an exact fast path (a mantissa below 2^53 times or divided by an
    /// exactly representable power of ten rounds correctly in one IEEE operation); anything
    /// else goes through the standard library's correctly rounded parser.
    static func parseDouble(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        guard !bytes.isEmpty else { return nil }
        var index = 0
        var negative = false
        if bytes[0] == UInt8(ascii: "-") || bytes[0] == UInt8(ascii: "+") {
            negative = bytes[0] == UInt8(ascii: "-")
            index = 1
        }
        guard index < bytes.count else { return nil }
        let first = bytes[index]
        if first == UInt8(ascii: "N") || first == UInt8(ascii: "I") || first == UInt8(ascii: "i") || first == UInt8(ascii: "n") {
            return Double(self.string(bytes))
        }
        var mantissa: UInt64 = 0
        var exponent = 0
        var sawDigit = false
        var exact = true
        while index < bytes.count, case let digit = bytes[index] &- UInt8(ascii: "0"), digit < 10 {
            sawDigit = true
            if mantissa < (1 << 53) / 10 { mantissa = mantissa * 10 + UInt64(digit) } else { exact = false }
            index += 1
        }
        if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
            index += 1
            while index < bytes.count, case let digit = bytes[index] &- UInt8(ascii: "0"), digit < 10 {
                sawDigit = true
                if mantissa < (1 << 53) / 10 { mantissa = mantissa * 10 + UInt64(digit) } else { exact = false }
                exponent -= 1
                index += 1
            }
        }
        guard sawDigit else { return nil }
        if index < bytes.count && (bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")) {
            index += 1
            var exponentNegative = false
            if index < bytes.count && (bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+")) {
                exponentNegative = bytes[index] == UInt8(ascii: "-")
                index += 1
            }
            var written = 0
            var sawExponentDigit = false
            while index < bytes.count, case let digit = bytes[index] &- UInt8(ascii: "0"), digit < 10 {
                sawExponentDigit = true
                if written < 100_000 { written = written * 10 + Int(digit) }
                index += 1
            }
            guard sawExponentDigit else { return nil }
            exponent += exponentNegative ? -written : written
        }
        guard index == bytes.count else { return nil }
        guard exact, exponent >= -22, exponent <= 22 else {
            return Double(self.string(bytes))
        }
        var value = Double(mantissa)
        if exponent < 0 {
            value /= self.exactPowersOfTen[-exponent]
        } else {
            value *= self.exactPowersOfTen[exponent]
        }
        return negative ? -value : value
    }

    // MARK: Dates and timestamps outside YYYY

    /// Parses `Y{4,}-MM-DD` at the start of `bytes`; returns its fields and the bytes used.
    private static func parseDatePrefix(
        _ bytes: UnsafeBufferPointer<UInt8>
    ) -> (year: Int64, month: Int64, day: Int64, length: Int)? {
        var index = 0
        var year: Int64 = 0
        while index < bytes.count, case let digit = bytes[index] &- UInt8(ascii: "0"), digit < 10 {
            guard index < 9 else { return nil }
            year = year * 10 + Int64(digit)
            index += 1
        }
        guard index >= 4, index + 6 <= bytes.count, bytes[index] == UInt8(ascii: "-"), bytes[index + 3] == UInt8(ascii: "-")
        else { return nil }
        let m1 = bytes[index + 1] &- UInt8(ascii: "0")
        let m2 = bytes[index + 2] &- UInt8(ascii: "0")
        let d1 = bytes[index + 4] &- UInt8(ascii: "0")
        let d2 = bytes[index + 5] &- UInt8(ascii: "0")
        guard m1 < 10, m2 < 10, d1 < 10, d2 < 10 else { return nil }
        let month = Int64(m1) * 10 + Int64(m2)
        let day = Int64(d1) * 10 + Int64(d2)
        guard (1...12).contains(month), day >= 1, day <= 31 else { return nil }
        return (year, month, day, index + 6)
    }

    private static let bcSuffix: [UInt8] = Array(" BC".utf8)

    private static func hasBCSuffix(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.count > 3 && bytes[(bytes.count - 3)...].elementsEqual(self.bcSuffix)
    }

    private static func isInfinity(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let text = self.string(bytes)
        return text == "infinity" || text == "-infinity"
    }

    /// Dates the fast path rejects: `infinity` → `.some(nil)`; BC dates and years past 9999
    /// → `.some(days)`; anything else → nil.
    private static func parseExtendedDate(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64?? {
        if self.isInfinity(bytes) { return .some(nil) }
        let isBC = self.hasBCSuffix(bytes)
        let body = UnsafeBufferPointer(rebasing: bytes[0..<(bytes.count - (isBC ? 3 : 0))])
        guard let date = self.parseDatePrefix(body), date.length == body.count else { return nil }
        let year = isBC ? 1 - date.year : date.year
        return .some(CivilTime.days(year: year, month: date.month, day: date.day))
    }

    /// Timestamps the fast path rejects, with the same outcomes as ``parseExtendedDate(_:)``.
    /// The date part is swapped for `1970-01-01` and the rest handed to ``CivilTime``.
    private static func parseExtendedTimestamp(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64?? {
        if self.isInfinity(bytes) { return .some(nil) }
        let isBC = self.hasBCSuffix(bytes)
        let body = UnsafeBufferPointer(rebasing: bytes[0..<(bytes.count - (isBC ? 3 : 0))])
        guard let date = self.parseDatePrefix(body) else { return nil }
        var normalized = Array("1970-01-01".utf8)
        normalized.append(contentsOf: body[date.length...])
        guard let timeOfDay = CivilTime.parseTimestamp(normalized) else { return nil }
        let days = CivilTime.days(year: isBC ? 1 - date.year : date.year, month: date.month, day: date.day)
        let (dayMicros, overflow1) = days.multipliedReportingOverflow(by: CivilTime.microsecondsPerDay)
        let (micros, overflow2) = dayMicros.addingReportingOverflow(timeOfDay)
        return overflow1 || overflow2 ? .some(nil) : .some(micros)
    }

    // MARK: bytea

    /// `\x` hex (or, defensively, the legacy escape format) into bytes.
    static func parseBytea(_ bytes: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        if bytes.count >= 2 && bytes[0] == UInt8(ascii: "\\") && bytes[1] == UInt8(ascii: "x") {
            guard bytes.count % 2 == 0 else { return nil }
            var output = [UInt8](repeating: 0, count: (bytes.count - 2) / 2)
            var index = 2
            var outputIndex = 0
            while index < bytes.count {
                guard let high = self.hexValue(bytes[index]), let low = self.hexValue(bytes[index + 1]) else { return nil }
                output[outputIndex] = high << 4 | low
                outputIndex += 1
                index += 2
            }
            return output
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte != UInt8(ascii: "\\") {
                output.append(byte)
                index += 1
            } else if index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "\\") {
                output.append(byte)
                index += 2
            } else if index + 3 < bytes.count,
                case let a = bytes[index + 1] &- UInt8(ascii: "0"), a < 4,
                case let b = bytes[index + 2] &- UInt8(ascii: "0"), b < 8,
                case let c = bytes[index + 3] &- UInt8(ascii: "0"), c < 8
            {
                output.append(a << 6 | b << 3 | c)
                index += 4
            } else {
                return nil
            }
        }
        return output
    }

    @inline(__always)
    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
