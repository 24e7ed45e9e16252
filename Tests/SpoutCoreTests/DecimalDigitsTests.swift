import SpoutCore
import Testing

/// `ChunkedOutput.appendDecimal` (and so every integer in every response) against Swift's own
/// `String(_:)`, at each digit count's edges, where a group boundary could drop or double a
/// digit.
struct DecimalDigitsTests {
    /// 0, then for every power of ten: one below it, it, one above it, and a value with every
    /// digit differing; both signs; the extremes of `Int64`.
    static let values: [Int64] = {
        var values: [Int64] = [0, 1, 9, .max, .min, .max - 1, .min + 1]
        var power: Int64 = 1
        for _ in 1...18 {
            power *= 10
            values += [power - 1, power, power + 1, power / 10 * 9 + 12_345 % power, power / 2 * 3 - 1]
        }
        values += [1_234_567_890_123_456_789, 987_654_321_987_654_321, 4_294_967_295, 4_294_967_296, 100_010_001_000]
        return values + values.map { $0 == .min ? .max : -$0 }
    }()

    @Test func writesWhatStringWrites() throws {
        for value in Self.values {
            let sink = CollectingSink()
            var out = ChunkedOutput(sink: sink)
            out.append(UInt8(ascii: "["))
            out.appendDecimal(value)
            out.append(UInt8(ascii: "]"))
            try out.finish()
            #expect(String(decoding: sink.bytes, as: UTF8.self) == "[\(value)]", "\(value)")
        }
    }

    /// Many numbers back to back across a chunk boundary: each starts where the last ended.
    @Test func numbersFollowEachOtherAcrossChunks() throws {
        let sink = CollectingSink()
        var out = ChunkedOutput(sink: sink)
        var expected = ""
        for index in 0..<20_000 {
            let value = Self.values[index % Self.values.count] &* Int64(index % 3 == 0 ? 1 : -1)
            out.appendDecimal(value)
            out.append(UInt8(ascii: ","))
            try out.flushIfFull()
            expected += "\(value),"
        }
        try out.finish()
        #expect(sink.chunkCount > 1)
        #expect(String(decoding: sink.bytes, as: UTF8.self) == expected)
    }
}
