/// The formats of a bulk write's body (many records in one request), by its media type.
public enum BulkFormat: Sendable, Hashable {
    /// `application/json`: one JSON array of objects, each a record.
    case jsonArray
    /// `application/x-ndjson` or `application/jsonl`: one JSON object a line (JSON Lines).
    case jsonLines
    /// `text/csv`: a header row of parameter names, then one record a row (RFC 4180).
    case csv

    /// The media types a bulk body may have, as a 415 lists them.
    public static let mediaTypes =
        "application/json (an array of objects), application/x-ndjson or application/jsonl (one object a line), or text/csv (a header row of parameter names)"

    /// The format of a body of media type `contentType` (compared by its essence); nil for
    /// any other, or none.
    public init?(contentType: String?) {
        switch contentType.map(MediaType.essence(of:)) {
        case "application/json": self = .jsonArray
        case "application/x-ndjson", "application/jsonl", "application/json-lines": self = .jsonLines
        case "text/csv": self = .csv
        default: return nil
        }
    }
}

/// Where a record of a bulk body is: its index in a JSON array (from 0), or the line it
/// starts on in JSON Lines or CSV (from 1; a CSV's header is line 1).
public enum BulkPosition: Sendable, Hashable, CustomStringConvertible {
    case index(Int)
    case line(Int)

    /// The member of an error body that names it: `index` or `line`.
    public var fieldName: String {
        switch self {
        case .index: "index"
        case .line: "line"
        }
    }

    public var number: Int {
        switch self {
        case .index(let number), .line(let number): number
        }
    }

    public var description: String { "\(self.fieldName) \(self.number)" }
}

/// One record of a bulk body: its arguments, as a single write's body would carry them, and
/// where it was.
public struct BulkRecord: Sendable {
    public var arguments: RawArguments
    public var position: BulkPosition

    public init(arguments: RawArguments, position: BulkPosition) {
        self.arguments = arguments
        self.position = position
    }
}
