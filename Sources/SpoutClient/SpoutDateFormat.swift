import Foundation

/// How the server writes dates and timestamps: its `dateFormat` (`SPOUT_DATE_FORMAT`).
public enum SpoutDateFormat: Sendable, Equatable {
    /// `epoch-ms`, Spout's default: a JSON number of milliseconds since 1970-01-01T00:00Z (a
    /// DATE is its day at 00:00 UTC).
    case epochMilliseconds
    /// `iso-8601`: `"YYYY-MM-DD"` for a DATE, `"YYYY-MM-DDTHH:MM:SS.sssZ"` for a timestamp
    /// (fractional seconds and a `±HH:MM` offset are optional when reading).
    case iso8601

    /// A `JSONDecoder` that decodes `Date` properties this way.
    func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        switch self {
        case .epochMilliseconds:
            decoder.dateDecodingStrategy = .millisecondsSince1970
        case .iso8601:
            decoder.dateDecodingStrategy = .custom { decoder in
                let container = try decoder.singleValueContainer()
                let text = try container.decode(String.self)
                guard let date = ISO8601Text.date(from: text) else {
                    throw DecodingError.dataCorruptedError(in: container, debugDescription: "'\(text)' is not an ISO-8601 date")
                }
                return date
            }
        }
        return decoder
    }
}
