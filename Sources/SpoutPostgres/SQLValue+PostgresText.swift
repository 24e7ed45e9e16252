import SpoutCore

extension SQLValue {
    /// Appends the PostgreSQL text form of a non-NULL value to `buffer`: what is sent as a
    /// text-format parameter (type OID 0, so the server infers or casts the type) and, escaped,
    /// as a `COPY` field.
    ///
    /// - integer, decimal: digits; double: shortest exact digits, `NaN`, `Infinity`, `-Infinity`
    /// - bool: `t` / `f`; text, time, json: as is
    /// - date: `YYYY-MM-DD`; timestamp: `YYYY-MM-DD HH:MM:SS[.ffffff]+00`
    /// - bytes: `\x` followed by lowercase hex
    /// - array: an array literal `{...}`, elements double-quoted with `\` and `"` escaped,
    ///   NULL unquoted, nested arrays as nested braces
    ///
    /// `.null` appends nothing; callers send it as a NULL pointer (or `\N` in COPY).
    func appendPostgresText(to buffer: inout [UInt8]) {
        switch self {
        case .null:
            break
        case .integer(let value):
            buffer.append(contentsOf: String(value).utf8)
        case .double(let value):
            if value.isNaN {
                buffer.append(contentsOf: "NaN".utf8)
            } else if value.isInfinite {
                buffer.append(contentsOf: (value < 0 ? "-Infinity" : "Infinity").utf8)
            } else {
                buffer.append(contentsOf: value.description.utf8)
            }
        case .decimal(let text):
            buffer.append(contentsOf: text.utf8)
        case .bool(let value):
            buffer.append(value ? UInt8(ascii: "t") : UInt8(ascii: "f"))
        case .text(let text):
            buffer.append(contentsOf: text.utf8)
        case .date(let days):
            CivilTime.appendDate(days: days, to: &buffer)
        case .timestamp(let microseconds):
            buffer.append(contentsOf: CivilTime.formatSQLTimestamp(microseconds: microseconds).utf8)
            buffer.append(contentsOf: "+00".utf8)
        case .time(let text):
            buffer.append(contentsOf: text.utf8)
        case .json(let text):
            buffer.append(contentsOf: text.utf8)
        case .bytes(let bytes):
            Self.appendHex(bytes, to: &buffer)
        case .array(let elements):
            Self.appendArrayLiteral(elements, to: &buffer)
        }
    }

    private static func appendHex(_ bytes: [UInt8], to buffer: inout [UInt8]) {
        buffer.reserveCapacity(buffer.count + 2 + bytes.count * 2)
        buffer.append(UInt8(ascii: "\\"))
        buffer.append(UInt8(ascii: "x"))
        for byte in bytes {
            buffer.append(HexDigits.digit(byte >> 4))
            buffer.append(HexDigits.digit(byte & 0x0F))
        }
    }

    private static func appendArrayLiteral(_ elements: [SQLValue], to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "{"))
        var element: [UInt8] = []
        for (position, value) in elements.enumerated() {
            if position > 0 { buffer.append(UInt8(ascii: ",")) }
            switch value {
            case .null:
                buffer.append(contentsOf: "NULL".utf8)
            case .array(let nested):
                self.appendArrayLiteral(nested, to: &buffer)
            default:
                element.removeAll(keepingCapacity: true)
                value.appendPostgresText(to: &element)
                buffer.append(UInt8(ascii: "\""))
                for byte in element {
                    if byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "\"") {
                        buffer.append(UInt8(ascii: "\\"))
                    }
                    buffer.append(byte)
                }
                buffer.append(UInt8(ascii: "\""))
            }
        }
        buffer.append(UInt8(ascii: "}"))
    }
}
