import Foundation
import Testing

@testable import SpoutClient

/// The ISO-8601 forms Spout writes, and the epoch-milliseconds default.
@Suite struct DateFormatTests {
    @Test func isoDatesAndTimestamps() {
        #expect(ISO8601Text.date(from: "1970-01-01") == Date(timeIntervalSince1970: 0))
        #expect(ISO8601Text.date(from: "1998-10-08") == Date(timeIntervalSince1970: 907_804_800))
        #expect(ISO8601Text.date(from: "9999-01-01") == Date(timeIntervalSince1970: 253_370_764_800))
        #expect(ISO8601Text.date(from: "1969-12-31") == Date(timeIntervalSince1970: -86_400))
        #expect(ISO8601Text.date(from: "2000-02-29T12:30:15.250Z") == Date(timeIntervalSince1970: 951_827_415.25))
        #expect(ISO8601Text.date(from: "2000-02-29T12:30:15Z") == Date(timeIntervalSince1970: 951_827_415))
        #expect(ISO8601Text.date(from: "2000-02-29T14:30:15+02:00") == Date(timeIntervalSince1970: 951_827_415))
        for bad in ["", "1998-13-01", "98-10-08", "1998-10-08T", "1998-10-08T10:00Q", "1998-10-08x"] {
            #expect(ISO8601Text.date(from: bad) == nil, "\(bad)")
        }
    }

    struct Dated: Decodable { var at: Date }

    @Test func decodersFollowTheServersFormat() throws {
        let epoch = try SpoutDateFormat.epochMilliseconds.makeDecoder().decode(Dated.self, from: Data(#"{"at":907804800000}"#.utf8))
        #expect(epoch.at == Date(timeIntervalSince1970: 907_804_800))
        let iso = try SpoutDateFormat.iso8601.makeDecoder().decode(Dated.self, from: Data(#"{"at":"1998-10-08"}"#.utf8))
        #expect(iso.at == epoch.at)
        #expect(throws: DecodingError.self) {
            try SpoutDateFormat.iso8601.makeDecoder().decode(Dated.self, from: Data(#"{"at":"yesterday"}"#.utf8))
        }
    }
}
