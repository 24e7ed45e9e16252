import SpoutCore

/// The declared type of a route parameter: how its text is converted into an ``SQLValue``.
///
/// | type        | accepts                                              | converts to            |
/// |-------------|------------------------------------------------------|------------------------|
/// | `.string`   | any text                                             | `.text`                |
/// | `.integer`  | `-12`, `+7` (64-bit)                                  | `.integer`             |
/// | `.number`   | `3.25`, `-1e3` (finite)                              | `.double`              |
/// | `.decimal`  | `-12.50` (digits, optional fraction; never rounded)  | `.decimal`             |
/// | `.boolean`  | `true`/`false`/`1`/`0` (any case)                    | `.bool`                |
/// | `.date`     | `YYYY-MM-DD` or epoch milliseconds                   | `.date(days:)` (floor) |
/// | `.datetime` | ISO-8601 (`T` or space, optional zone) or epoch ms   | `.timestamp`           |
/// | `.bytes`    | Base64 (standard or URL-safe, padding optional)      | `.bytes`               |
/// | `.list(t)`  | every value of a repeated key (or a JSON array)      | `.array` of `t`        |
///
/// A `.bytes` argument that arrives as content rather than text (a multipart part, a request
/// body: ``RawArguments/appendContent(_:for:)``) is taken as it is, without Base64.
///
/// Lists of lists are not supported: ``Parameter`` rejects them.
public indirect enum ParameterType: Sendable, Hashable, CustomStringConvertible {
    case string
    case integer
    case number
    case decimal
    case boolean
    case date
    case datetime
    case bytes
    case list(ParameterType)

    /// The type's name as it appears in error bodies (`"invalid integer"`) and API docs.
    public var description: String {
        switch self {
        case .string: return "string"
        case .integer: return "integer"
        case .number: return "number"
        case .decimal: return "decimal"
        case .boolean: return "boolean"
        case .date: return "date"
        case .datetime: return "datetime"
        case .bytes: return "bytes"
        case .list(let element): return "list of \(element)"
        }
    }

    /// The type of one value: the element type of a list, the type itself otherwise.
    public var elementType: ParameterType {
        if case .list(let element) = self { return element }
        return self
    }

    public var isList: Bool {
        if case .list = self { return true }
        return false
    }

    /// Converts one textual value with the element type; nil when it does not convert.
    ///
    /// For a list type this converts a single element (lists are assembled by the caller).
    public func convert(_ text: String) -> SQLValue? {
        switch self.elementType {
        case .string:
            return .text(text)
        case .integer:
            return Int64(text).map(SQLValue.integer)
        case .number:
            guard Self.looksNumeric(text), let value = Double(text), value.isFinite else { return nil }
            return .double(value)
        case .decimal:
            return Self.canonicalDecimal(text).map(SQLValue.decimal)
        case .boolean:
            switch text.lowercased() {
            case "true", "1": return .bool(true)
            case "false", "0": return .bool(false)
            default: return nil
            }
        case .date:
            if let days = CivilTime.parseDate(text) { return .date(days: days) }
            guard let millis = Int64(text) else { return nil }
            return .date(days: CivilTime.floorDivide(millis, 86_400_000))
        case .datetime:
            if let micros = CivilTime.parseTimestamp(text) { return .timestamp(microseconds: micros) }
            guard let millis = Int64(text) else { return nil }
            let (micros, overflow) = millis.multipliedReportingOverflow(by: 1000)
            return overflow ? nil : .timestamp(microseconds: micros)
        case .bytes:
            return Base64Text.decode(text).map(SQLValue.bytes)
        case .list:
            return nil
        }
    }

    /// The days a `.date` value may fall on, and the days a `.datetime` value's UTC instant may
    /// fall on: 0001-01-01 through 9999-12-31, the years `YYYY-MM-DD` writes. Both databases
    /// store them alike; PostgreSQL refuses a year 0 in text and dates past 5874897, SQLite
    /// would compare anything.
    public static let dayRange = CivilTime.days(year: 1, month: 1, day: 1)...CivilTime.days(year: 9999, month: 12, day: 31)

    /// The text of the error for `value` (converted with this type) when it lies outside what
    /// the type accepts (``dayRange`` for dates and date-times), nil when it lies within.
    public func rangeError(for value: SQLValue) -> String? {
        switch value {
        case .date(let days) where !Self.dayRange.contains(days):
            return "date out of range (0001-01-01 to 9999-12-31)"
        case .timestamp(let microseconds)
        where !Self.dayRange.contains(CivilTime.floorDivide(microseconds, CivilTime.microsecondsPerDay)):
            return "datetime out of range (0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z)"
        default:
            return nil
        }
    }

    /// Rejects spellings `Double(_:)` accepts but clients should not send (`nan`, `inf`, hex).
    private static func looksNumeric(_ text: String) -> Bool {
        guard let first = text.utf8.first else { return false }
        let allowed: (UInt8) -> Bool = { byte in
            (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") || byte == UInt8(ascii: "+")
                || byte == UInt8(ascii: "-")
        }
        return allowed(first) && text.utf8.allSatisfy(allowed)
    }

    /// `[+-]digits[.digits]` or `[+-].digits`, returned without a leading `+`; nil otherwise.
    private static func canonicalDecimal(_ text: String) -> String? {
        var bytes = Array(text.utf8)
        if bytes.first == UInt8(ascii: "+") { bytes.removeFirst() }
        var index = bytes.first == UInt8(ascii: "-") ? 1 : 0
        var digits = 0
        var sawPoint = false
        while index < bytes.count {
            let byte = bytes[index]
            if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                digits += 1
            } else if byte == UInt8(ascii: ".") && !sawPoint {
                sawPoint = true
            } else {
                return nil
            }
            index += 1
        }
        guard digits > 0, bytes.last != UInt8(ascii: ".") else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}
