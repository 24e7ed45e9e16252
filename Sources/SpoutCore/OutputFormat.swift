/// The formats a ``RowStream`` can be written as.
public enum OutputFormat: Sendable, Hashable {
    /// JSON: compact by default, indented by two spaces when `pretty`.
    case json(pretty: Bool = false)
    /// JSON Lines (NDJSON): one compact JSON object per line.
    case jsonLines
    /// CSV (RFC 4180, UTF-8, CRLF line ends, a header row of column labels). Attached arrays
    /// cannot be expressed in CSV and are rejected.
    case csv
    /// A stored file: the first column of each row as it is stored (bytes as they are, text as
    /// its UTF-8, any other value as its JSON), served as `mediaType`; a NULL in the first row
    /// is ``RowStreamError/noRow``. For results of one value (``ResultShape/scalar``).
    case raw(mediaType: String)

    /// The HTTP `Content-Type` of the format.
    public var contentType: String {
        switch self {
        case .json: return "application/json"
        case .jsonLines: return "application/x-ndjson"
        case .csv: return "text/csv; charset=utf-8"
        case .raw(let mediaType): return mediaType
        }
    }
}

/// What a row stream's output looks like.
public enum ResultShape: String, Sendable, Hashable, CaseIterable {
    /// Every row: a JSON array of objects (JSON Lines and CSV: one line per row).
    case array
    /// The first row alone, as one object; no row is ``RowStreamError/noRow``.
    case object
    /// The first column of the first row, as a bare value; no row is ``RowStreamError/noRow``.
    case scalar
}

/// Why a row stream could not be written. Both are thrown before any byte reaches the sink.
public enum RowStreamError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The shape is ``ResultShape/object`` or ``ResultShape/scalar`` and the query found no row.
    case noRow
    /// CSV was requested for a stream with attached arrays.
    case attachmentsNotAllowedInCSV

    public var description: String {
        switch self {
        case .noRow: return "no row found"
        case .attachmentsNotAllowedInCSV: return "attached arrays cannot be written as CSV; ask for JSON or JSON Lines"
        }
    }
}
