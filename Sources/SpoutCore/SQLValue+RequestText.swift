extension SQLValue {
    /// The value written as a request writes it (a query string, a path segment, a message
    /// naming allowed values): integers and doubles as Swift prints them, `true`/`false`, dates
    /// and timestamps in ISO 8601 (`CivilTime`), text, decimals, times and JSON as they are,
    /// array items joined with commas; `null` for null and `bytes(count)` for bytes.
    public func requestText(null: String, bytes: (Int) -> String) -> String {
        switch self {
        case .null: return null
        case .integer(let integer): return String(integer)
        case .double(let double): return String(double)
        case .decimal(let text), .text(let text), .time(let text), .json(let text): return text
        case .bool(let bool): return bool ? "true" : "false"
        case .date(let days): return CivilTime.formatDate(days: days)
        case .timestamp(let microseconds): return CivilTime.formatTimestamp(microseconds: microseconds)
        case .bytes(let value): return bytes(value.count)
        case .array(let items): return items.map { $0.requestText(null: null, bytes: bytes) }.joined(separator: ",")
        }
    }
}
