import SpoutCore
import Testing

@testable import SpoutPostgres

/// Unit tests of the text-format parsers (no server needed); the integration tests in
/// ``PostgresDriverTests`` cover the same rules against real PostgreSQL output.
struct PostgresTextDecoderTests {
    private func decode(_ text: String, as kind: PostgresScalarKind) -> SQLValue {
        Array(text.utf8).withUnsafeBufferPointer { PostgresTextDecoder.decode($0, as: kind) }
    }

    private func array(_ text: String, of kind: PostgresScalarKind = .text) -> SQLValue {
        Array(text.utf8).withUnsafeBufferPointer { PostgresArrayLiteral.parse($0, element: kind) }
    }

    private func parseDouble(_ text: String) -> Double? {
        Array(text.utf8).withUnsafeBufferPointer { PostgresTextDecoder.parseDouble($0) }
    }

    @Test func doublesMatchTheStandardLibraryBitForBit() {
        // A fixed xorshift sequence: the same inputs on every run.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func nextRandom() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        var inputs = [
            "0", "-0", "1", "0.1", "4.35", "1e22", "1e23", "9007199254740993", "123456789012345678",
            "1.7976931348623157e+308", "5e-324", "2.2250738585072014e-308", "Infinity", "-Infinity",
        ]
        for _ in 0..<20_000 {
            let bits = nextRandom()
            let double = Double(bitPattern: bits)
            if !double.isNaN { inputs.append(double.description) }
            let mantissa = nextRandom() % 100_000_000_000_000_000
            let exponent = Int(nextRandom() % 61) - 30
            inputs.append("\(mantissa)e\(exponent)")
            inputs.append("-\(mantissa % 1_000_000).\(nextRandom() % 1000)")
        }
        for input in inputs {
            #expect(self.parseDouble(input)?.bitPattern == Double(input)?.bitPattern, "\(input)")
        }
        for invalid in ["", "-", "1e", "1.2.3", "abc", ".", "e5", "1 "] {
            #expect(self.parseDouble(invalid) == nil, "\(invalid)")
        }
        guard case .double(let nan) = self.decode("NaN", as: .double) else {
            Issue.record("NaN did not decode as a double")
            return
        }
        #expect(nan.isNaN)
    }

    @Test func integersIncludingTheExtremes() {
        #expect(self.decode("0", as: .integer) == .integer(0))
        #expect(self.decode("-9223372036854775808", as: .integer) == .integer(.min))
        #expect(self.decode("9223372036854775807", as: .integer) == .integer(.max))
        // Never sent by PostgreSQL; kept as text rather than lost.
        #expect(self.decode("9223372036854775808", as: .integer) == .text("9223372036854775808"))
        #expect(self.decode("1a", as: .integer) == .text("1a"))
    }

    /// Text a row writer copies as it is must be exactly what parsing and writing it gives.
    @Test func canonicalIntegersAreTheirOwnJSON() throws {
        func canonical(_ text: String) -> Bool {
            Array(text.utf8).withUnsafeBufferPointer { PostgresTextDecoder.isCanonicalInteger($0) }
        }
        var accepted = 0
        for text in [
            "0", "7", "-7", "10", "-10", "32767", "-32768", "2147483647", "-2147483648", "999999999999999999",
            "-999999999999999999", "9223372036854775807", "-9223372036854775808", "1000000000000000000",
            "-0", "00", "007", "-01", "+5", "", "-", "1-", "1e3", "1.0", " 1", "١٢",
        ] {
            guard canonical(text) else { continue }
            accepted += 1
            let sink = CollectingSink()
            var out = ChunkedOutput(sink: sink)
            let value = Array(text.utf8).withUnsafeBufferPointer { PostgresTextDecoder.parseInteger($0) }
            JSONText.writeInteger(try #require(value, "\(text)"), to: &out)
            try out.finish()
            #expect(sink.text == text)
        }
        #expect(accepted == 11)
        for text in ["-0", "00", "007", "-01", "+5", "", "-", "1-", "1e3", "1.0", " 1", "١٢", "1000000000000000000"] {
            #expect(!canonical(text), "\(text)")
        }
    }

    @Test func datesAndTimestampsBeyondFourDigitYears() {
        #expect(self.decode("12345-01-01", as: .date) == .date(days: CivilTime.days(year: 12345, month: 1, day: 1)))
        #expect(self.decode("0001-01-01 BC", as: .date) == .date(days: CivilTime.days(year: 0, month: 1, day: 1)))
        #expect(self.decode("-infinity", as: .date) == .null)
        #expect(self.decode("infinity", as: .timestamp) == .null)
        #expect(
            self.decode("12345-01-01 00:00:00", as: .timestamp)
                == .timestamp(microseconds: CivilTime.days(year: 12345, month: 1, day: 1) * CivilTime.microsecondsPerDay)
        )
        #expect(
            self.decode("0001-01-01 10:00:00.5+00 BC", as: .timestamp)
                == .timestamp(
                    microseconds: CivilTime.days(year: 0, month: 1, day: 1) * CivilTime.microsecondsPerDay + 36_000_500_000)
        )
        // 294276 AD is past the range of Int64 microseconds.
        #expect(self.decode("294276-12-31 23:59:59", as: .timestamp) == .null)
    }

    @Test func byteaInBothOutputFormats() {
        #expect(self.decode("\\x00ff7F", as: .bytes) == .bytes([0x00, 0xff, 0x7f]))
        #expect(self.decode("\\x", as: .bytes) == .bytes([]))
        #expect(self.decode("a\\\\b\\001", as: .bytes) == .bytes([0x61, 0x5c, 0x62, 0x01]))
    }

    @Test func arrayLiterals() {
        #expect(self.array("[0:1]={1,2}", of: .integer) == .array([.integer(1), .integer(2)]))
        #expect(self.array("{ a , b }") == .array([.text("a"), .text("b")]))
        #expect(self.array(#"{null,"null",NULL2}"#) == .array([.null, .text("null"), .text("NULL2")]))
        #expect(self.array(#"{"a\\b\"c"}"#) == .array([.text(#"a\b"c"#)]))
        #expect(self.array(#"{{"x"},{NULL}}"#) == .array([.array([.text("x")]), .array([.null])]))
        #expect(self.array("{a") == .text("{a"))
        #expect(self.array("{}x") == .text("{}x"))
    }

    @Test func parameterTextOfArrays() {
        var buffer: [UInt8] = []
        SQLValue.array([.text(#"a"b\c"#), .null, .array([.integer(1)]), .bytes([0xab]), .double(.nan)])
            .appendPostgresText(to: &buffer)
        #expect(String(decoding: buffer, as: UTF8.self) == #"{"a\"b\\c",NULL,{"1"},"\\xab","NaN"}"#)
    }
}
