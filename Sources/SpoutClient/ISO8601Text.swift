import Foundation

/// Reads the ISO-8601 forms Spout writes, by hand: `Foundation`'s formatters differ between
/// platforms and none reads both a bare date and a timestamp with milliseconds.
enum ISO8601Text {
    /// `YYYY-MM-DD`, optionally followed by `THH:MM[:SS[.fraction]]` and `Z` or `±HH:MM`
    /// (UTC when absent); nil for anything else.
    static func date(from text: String) -> Date? {
        var scanner = Scanner(bytes: Array(text.utf8))
        guard let year = scanner.number(digits: 4), scanner.skip("-"), let month = scanner.number(digits: 2), scanner.skip("-"),
            let day = scanner.number(digits: 2), (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var seconds = Double(Self.days(year: year, month: month, day: day)) * 86_400
        if scanner.isAtEnd { return Date(timeIntervalSince1970: seconds) }
        guard scanner.skip("T") || scanner.skip(" "), let hour = scanner.number(digits: 2), scanner.skip(":"),
            let minute = scanner.number(digits: 2)
        else { return nil }
        seconds += Double(hour * 3600 + minute * 60)
        if scanner.skip(":") {
            guard let second = scanner.number(digits: 2) else { return nil }
            seconds += Double(second)
            if scanner.skip(".") {
                let digits = scanner.digits()
                guard !digits.isEmpty, let fraction = Double("0." + digits) else { return nil }
                seconds += fraction
            }
        }
        if scanner.skip("Z") || scanner.isAtEnd {
            return scanner.isAtEnd ? Date(timeIntervalSince1970: seconds) : nil
        }
        let sign: Double
        if scanner.skip("+") { sign = 1 } else if scanner.skip("-") { sign = -1 } else { return nil }
        guard let offsetHours = scanner.number(digits: 2) else { return nil }
        _ = scanner.skip(":")
        let offsetMinutes = scanner.number(digits: 2) ?? 0
        guard scanner.isAtEnd else { return nil }
        return Date(timeIntervalSince1970: seconds - sign * Double(offsetHours * 3600 + offsetMinutes * 60))
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date.
    static func days(year: Int, month: Int, day: Int) -> Int {
        // Count years from March so that February's leap day is the last day of a year.
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let monthFromMarch = (month + 9) % 12
        let dayOfYear = (153 * monthFromMarch + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// A cursor over ASCII bytes.
    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        var isAtEnd: Bool { self.index == self.bytes.count }

        mutating func skip(_ character: Unicode.Scalar) -> Bool {
            guard self.index < self.bytes.count, self.bytes[self.index] == UInt8(ascii: character) else { return false }
            self.index += 1
            return true
        }

        mutating func number(digits count: Int) -> Int? {
            guard self.index + count <= self.bytes.count else { return nil }
            var value = 0
            for byte in self.bytes[self.index..<self.index + count] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            self.index += count
            return value
        }

        mutating func digits() -> String {
            let start = self.index
            while self.index < self.bytes.count, (0x30...0x39).contains(self.bytes[self.index]) { self.index += 1 }
            return String(decoding: self.bytes[start..<self.index], as: UTF8.self)
        }
    }
}
