/// Conversions between calendar dates/times and day or microsecond counts since the Unix epoch,
/// in the proleptic Gregorian calendar, independent of the process's time zone.
///
/// Both drivers and the encoders use these, so a DATE is the same number everywhere:
/// `9999-01-01` is day 2_932_532, i.e. 253_370_764_800_000 ms.
public enum CivilTime {
    public static let microsecondsPerDay: Int64 = 86_400_000_000

    /// Days since 1970-01-01 of a (year, month, day); months 1...12.
    @inlinable
    public static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        // Howard Hinnant's days_from_civil.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let shiftedMonth = month > 2 ? month - 3 : month + 9
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The (year, month, day) of a day count since 1970-01-01.
    @inlinable
    public static func civil(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Parses `YYYY-MM-DD` (exactly; a 4-digit year) into days since the epoch, or nil.
    ///
    /// Inlinable so that drivers parsing straight from their buffers get a specialized copy.
    /// Every row of a streamed date column comes through here: the ten bytes are read once,
    /// and the day count is computed in unsigned arithmetic (``daysOfFourDigitYear(_:_:_:)``).
    @inlinable
    public static func parseDate<Bytes: Collection<UInt8>>(_ text: Bytes) -> Int64? where Bytes.Index == Int {
        guard text.count == 10 else { return nil }
        let s = text.startIndex
        let zero = UInt8(ascii: "0")
        let y1 = text[s] &- zero, y2 = text[s + 1] &- zero, y3 = text[s + 2] &- zero, y4 = text[s + 3] &- zero
        let m1 = text[s + 5] &- zero, m2 = text[s + 6] &- zero, d1 = text[s + 8] &- zero, d2 = text[s + 9] &- zero
        guard text[s + 4] == UInt8(ascii: "-"), text[s + 7] == UInt8(ascii: "-"),
            y1 < 10, y2 < 10, y3 < 10, y4 < 10, m1 < 10, m2 < 10, d1 < 10, d2 < 10
        else { return nil }
        let year = UInt(y1) &* 1000 &+ UInt(y2) &* 100 &+ UInt(y3) &* 10 &+ UInt(y4)
        let month = UInt(m1) &* 10 &+ UInt(m2)
        let day = UInt(d1) &* 10 &+ UInt(d2)
        guard month >= 1, month <= 12, day >= 1, day <= 28 || Int64(day) <= daysInMonth(year: Int64(year), month: Int64(month))
        else { return nil }
        return daysOfFourDigitYear(year, month, day)
    }

    /// ``days(year:month:day:)`` for years 0...9999 (a valid date), without signed division:
    /// the year is shifted by one 400-year era (146,097 days) so nothing is negative.
    @inlinable @inline(__always)
    static func daysOfFourDigitYear(_ year: UInt, _ month: UInt, _ day: UInt) -> Int64 {
        let y = year &+ 400 &- (month <= 2 ? 1 : 0)
        let era = y / 400
        let yearOfEra = y &- era &* 400
        let shiftedMonth = month > 2 ? month &- 3 : month &+ 9
        let dayOfYear = (153 &* shiftedMonth &+ 2) / 5 &+ day &- 1
        let dayOfEra = yearOfEra &* 365 &+ yearOfEra / 4 &- yearOfEra / 100 &+ dayOfYear
        return Int64(bitPattern: UInt64(era &* 146_097 &+ dayOfEra)) &- 719_468 &- 146_097
    }

    /// Parses `YYYY-MM-DD` from a string; see ``parseDate(_:)-(Bytes)``.
    public static func parseDate(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { parseDate($0) }
    }

    /// Parses `YYYY-MM-DD[ T]HH:MM:SS[.ffffff][Z|+HH[:MM]|-HH[:MM]]` into microseconds since the
    /// epoch (an offset is subtracted; no offset means UTC), or nil.
    @inlinable
    public static func parseTimestamp<Bytes: Collection<UInt8>>(_ text: Bytes) -> Int64? where Bytes.Index == Int {
        let s = text.startIndex
        guard text.count >= 19, let days = parseDate(text[s..<(s + 10)]),
            text[s + 10] == UInt8(ascii: " ") || text[s + 10] == UInt8(ascii: "T"),
            text[s + 13] == UInt8(ascii: ":"), text[s + 16] == UInt8(ascii: ":"),
            let hour = digits(text, s + 11, 2), let minute = digits(text, s + 14, 2),
            let second = digits(text, s + 17, 2), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = s + 19
        var micros: Int64 = 0
        if index < text.endIndex && text[index] == UInt8(ascii: ".") {
            index += 1
            var scale: Int64 = 100_000
            let fractionStart = index
            while index < text.endIndex, let digit = digitValue(text[index]) {
                micros += digit * scale
                scale /= 10
                index += 1
            }
            guard index > fractionStart else { return nil }
        }
        var offsetSeconds: Int64 = 0
        if index < text.endIndex {
            let sign = text[index]
            if sign == UInt8(ascii: "Z") && index + 1 == text.endIndex {
                index += 1
            } else if sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                guard let hours = digits(text, index + 1, 2) else { return nil }
                var minutes: Int64 = 0
                index += 3
                if index < text.endIndex {
                    if text[index] == UInt8(ascii: ":") { index += 1 }
                    guard let parsed = digits(text, index, 2) else { return nil }
                    minutes = parsed
                    index += 2
                }
                offsetSeconds = (hours * 3600 + minutes * 60) * (sign == UInt8(ascii: "-") ? -1 : 1)
            }
            guard index == text.endIndex else { return nil }
        }
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return seconds * 1_000_000 + micros
    }

    /// Parses a timestamp from a string; see ``parseTimestamp(_:)-(Bytes)``.
    public static func parseTimestamp(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { parseTimestamp($0) }
    }

    /// `YYYY-MM-DD` for a day count (years outside 0...9999 are written with more digits or a sign).
    public static func formatDate(days: Int64) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(10)
        appendDate(days: days, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends ``formatDate(days:)``'s text to `buffer`, as its bytes.
    public static func appendDate(days: Int64, to buffer: inout [UInt8]) {
        let (year, month, day) = civil(days: days)
        guard (0...9999).contains(year) else {
            buffer.append(contentsOf: (pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2)).utf8)
            return
        }
        let zero = UInt8(ascii: "0")
        buffer.append(zero + UInt8(year / 1000))
        buffer.append(zero + UInt8(year / 100 % 10))
        buffer.append(zero + UInt8(year / 10 % 10))
        buffer.append(zero + UInt8(year % 10))
        buffer.append(UInt8(ascii: "-"))
        buffer.append(zero + UInt8(month / 10))
        buffer.append(zero + UInt8(month % 10))
        buffer.append(UInt8(ascii: "-"))
        buffer.append(zero + UInt8(day / 10))
        buffer.append(zero + UInt8(day % 10))
    }

    /// `YYYY-MM-DDTHH:MM:SS.sssZ` (milliseconds) for a microsecond count.
    public static func formatTimestamp(microseconds: Int64) -> String {
        let millis = floorDivide(microseconds, 1000)
        let days = floorDivide(millis, 86_400_000)
        var rest = millis - days * 86_400_000
        let hour = rest / 3_600_000
        rest %= 3_600_000
        let minute = rest / 60_000
        rest %= 60_000
        return formatDate(days: days) + "T" + pad(hour, 2) + ":" + pad(minute, 2) + ":" + pad(rest / 1000, 2) + "."
            + pad(rest % 1000, 3) + "Z"
    }

    /// `YYYY-MM-DD HH:MM:SS[.ffffff]` (UTC, no zone): how drivers bind timestamps as text.
    public static func formatSQLTimestamp(microseconds: Int64) -> String {
        let days = floorDivide(microseconds, microsecondsPerDay)
        var rest = microseconds - days * microsecondsPerDay
        let fraction = rest % 1_000_000
        rest /= 1_000_000
        var text = formatDate(days: days) + " " + pad(rest / 3600, 2) + ":" + pad(rest % 3600 / 60, 2) + ":" + pad(rest % 60, 2)
        if fraction != 0 { text += "." + pad(fraction, 6) }
        return text
    }

    @inlinable
    public static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    @inlinable
    static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value.magnitude)
        let padded = digits.count < width ? String(repeating: "0", count: width - digits.count) + digits : digits
        return value < 0 ? "-" + padded : padded
    }

    @inlinable @inline(__always)
    static func digitValue(_ byte: UInt8) -> Int64? {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") ? Int64(byte - UInt8(ascii: "0")) : nil
    }

    @inlinable @inline(__always)
    static func digits<Bytes: Collection<UInt8>>(_ text: Bytes, _ start: Int, _ count: Int) -> Int64?
    where Bytes.Index == Int {
        guard start + count <= text.endIndex else { return nil }
        var value: Int64 = 0
        for index in start..<(start + count) {
            guard let digit = digitValue(text[index]) else { return nil }
            value = value * 10 + digit
        }
        return value
    }
}
