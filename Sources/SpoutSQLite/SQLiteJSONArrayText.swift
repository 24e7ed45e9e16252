import SpoutCore

/// The JSON text an `.array` parameter is bound as, so SQL can expand it with `json_each(?1)`.
///
/// Elements are written with the same text SQLite binds for scalars, so `json_each` values
/// compare equal to stored column values: integers, finite doubles, plain decimals and booleans
/// as JSON numbers/booleans; text, time, `NaN`-like decimals, dates (`YYYY-MM-DD`) and
/// timestamps (`YYYY-MM-DD HH:MM:SS[.ffffff]`) as JSON strings; JSON values embedded as-is;
/// bytes as base64 strings; non-finite doubles and NULL as `null`; nested arrays as arrays.
enum SQLiteJSONArrayText {
    static func text(of elements: [SQLValue]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(elements.count * 8 + 2)
        Self.append(.array(elements), to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    private static func append(_ value: SQLValue, to output: inout [UInt8]) {
        switch value {
        case .null:
            output.append(contentsOf: "null".utf8)
        case .integer(let integer):
            output.append(contentsOf: String(integer).utf8)
        case .double(let double):
            output.append(contentsOf: (double.isFinite ? double.description : "null").utf8)
        case .decimal(let text):
            if SQLiteDecimalText.isPlainDecimal(text.utf8) {
                output.append(contentsOf: text.utf8)
            } else {
                JSONText.appendString(text, to: &output)
            }
        case .bool(let bool):
            output.append(contentsOf: (bool ? "true" : "false").utf8)
        case .text(let text), .time(let text):
            JSONText.appendString(text, to: &output)
        case .json(let text):
            output.append(contentsOf: text.utf8)
        case .date(let days):
            JSONText.appendString(CivilTime.formatDate(days: days), to: &output)
        case .timestamp(let microseconds):
            JSONText.appendString(CivilTime.formatSQLTimestamp(microseconds: microseconds), to: &output)
        case .bytes(let bytes):
            JSONText.appendString(Self.base64(bytes), to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (position, element) in elements.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                Self.append(element, to: &output)
            }
            output.append(UInt8(ascii: "]"))
        }
    }

    private static func base64(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let first = UInt32(bytes[index])
            let second = index + 1 < bytes.count ? UInt32(bytes[index + 1]) : 0
            let third = index + 2 < bytes.count ? UInt32(bytes[index + 2]) : 0
            let group = first << 16 | second << 8 | third
            output.append(alphabet[Int(group >> 18 & 0x3F)])
            output.append(alphabet[Int(group >> 12 & 0x3F)])
            output.append(index + 1 < bytes.count ? alphabet[Int(group >> 6 & 0x3F)] : UInt8(ascii: "="))
            output.append(index + 2 < bytes.count ? alphabet[Int(group & 0x3F)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }
}
