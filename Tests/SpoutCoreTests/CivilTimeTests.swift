@testable import SpoutCore
import Testing

/// Dates and timestamps: known values, and the `YYYY-MM-DD` parser every streamed date column
/// goes through, against the general day count (``CivilTime/days(year:month:day:)``) and its
/// inverse.
@Suite struct CivilTimeTests {
    private static func text(_ year: Int64, _ month: Int64, _ day: Int64) -> String {
        func padded(_ value: Int64, _ width: Int) -> String {
            String(repeating: "0", count: width - String(value).count) + String(value)
        }
        return "\(padded(year, 4))-\(padded(month, 2))-\(padded(day, 2))"
    }

    /// Every day of every month of a spread of years, edges included, plus days 29–31 where the
    /// month has none (nil): the month's length comes from the general count, not the parser's.
    @Test func everyDateOfFourDigitYearsParsesToTheGeneralDayCount() {
        let years: [Int64] = [0, 1, 4, 99, 100, 400, 1582, 1600, 1700, 1900, 1969, 1970, 1999, 2000, 2023, 2024, 2100, 9998, 9999]
            + Array(stride(from: 3, through: 9999, by: 97))
        for year in years {
            for month: Int64 in 1...12 {
                let next = month == 12 ? CivilTime.days(year: year + 1, month: 1, day: 1) : CivilTime.days(year: year, month: month + 1, day: 1)
                let length = next - CivilTime.days(year: year, month: month, day: 1)
                for day: Int64 in 1...31 {
                    let parsed = CivilTime.parseDate(Self.text(year, month, day))
                    if day <= length {
                        #expect(parsed == CivilTime.days(year: year, month: month, day: day), "\(Self.text(year, month, day))")
                        if let parsed { #expect(CivilTime.civil(days: parsed) == (year, month, day)) }
                    } else {
                        #expect(parsed == nil, "\(Self.text(year, month, day))")
                    }
                }
            }
        }
        #expect(CivilTime.parseDate("1970-01-01") == 0)
        #expect(CivilTime.parseDate("9999-01-01") == 2_932_532)
        #expect(CivilTime.parseDate("0000-01-01") == -719_528)
    }

    @Test(arguments: [
        "2024-1-01 ", "2024/01/01", "20a4-01-01", "2024-00-01", "2024-13-01", "2024-01-00", "2024-01-32", "2023-02-29",
        "2024-02-30", "12024-01-01", "2024-01-1", "", "2024-01-01 ", "+024-01-01", "2024-0:-01", "2024-01-0/",
    ])
    func malformedOrImpossibleDatesAreRejected(_ text: String) {
        #expect(CivilTime.parseDate(text) == nil)
    }

    @Test func knownDates() {
        #expect(CivilTime.parseDate("1970-01-01") == 0)
        #expect(CivilTime.parseDate("9999-01-01") == 2_932_532)
        #expect(CivilTime.parseDate("1953-09-02").map { $0 * 86_400_000 } == -515_376_000_000)
        #expect(CivilTime.parseDate("2024-02-30") == nil)
        #expect(CivilTime.parseDate("2024-2-03") == nil)
        for days in stride(from: Int64(-719_162), through: 2_932_896, by: 997) {
            #expect(CivilTime.parseDate(CivilTime.formatDate(days: days)) == days)
        }
        #expect(CivilTime.formatDate(days: 0) == "1970-01-01")
        #expect(CivilTime.formatDate(days: 2_932_896) == "9999-12-31")
        #expect(CivilTime.formatDate(days: 2_932_897) == "10000-01-01")
        #expect(CivilTime.formatDate(days: -719_529) == "-0001-12-31")
        var buffer = Array("d=".utf8)
        CivilTime.appendDate(days: 19_753, to: &buffer)
        #expect(String(decoding: buffer, as: UTF8.self) == "d=2024-01-31")
    }

    @Test func timestamps() {
        #expect(CivilTime.parseTimestamp("1970-01-01 00:00:01") == 1_000_000)
        #expect(CivilTime.parseTimestamp("1970-01-01T00:00:00.5Z") == 500_000)
        #expect(CivilTime.parseTimestamp("1970-01-01 02:00:00+02") == 0)
        #expect(CivilTime.parseTimestamp("1970-01-01 00:00:00-01:30") == 5_400_000_000)
        #expect(CivilTime.parseTimestamp("1970-01-01 25:00:00") == nil)
        #expect(CivilTime.formatSQLTimestamp(microseconds: 1_000_001) == "1970-01-01 00:00:01.000001")
        #expect(CivilTime.formatTimestamp(microseconds: 0) == "1970-01-01T00:00:00.000Z")
    }
}
