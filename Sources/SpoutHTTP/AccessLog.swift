import Logging

/// Where a connection's access-log entries go: its server's logger.
///
/// When the logger's handler is Spout's own ``LineLogHandler`` (as `spout serve` sets it up)
/// with no metadata of its own, an entry is written from its fields directly, in the order the
/// handler sorts keys, with no `Logger.Metadata` dictionary built, hashed and sorted per
/// request (that was an eighth of the CPU of `GET /health`). Any other handler gets the same
/// fields through `Logger`, as metadata. The bytes a ``LineLogHandler`` writes are the same
/// either way (`AccessLogTests`), and so is the level check.
struct AccessLog {
    let logger: Logger
    /// The logger's handler, when entries are written to it directly.
    private let lines: LineLogHandler?

    init(logger: Logger) {
        self.logger = logger
        let lines = logger.handler as? LineLogHandler
        self.lines = lines?.writesWithoutMetadata == true ? lines : nil
    }

    func record(_ entry: AccessLogEntry) {
        if let lines = self.lines {
            guard lines.logLevel <= entry.level else { return }
            lines.write(entry)
            return
        }
        self.logger.log(level: entry.level, entry.message, metadata: entry.metadata, source: "SpoutHTTP")
    }
}

/// One request's access-log entry: the `request` line at `info`, or `request failed` at `error`
/// with the failure under `error`. The one place that names the access log's fields.
struct AccessLogEntry {
    var requestID: String
    var traceID: String
    var spanID: String
    var method: String
    var path: Substring
    var status: Int
    var bytes: Int
    /// The request's duration in milliseconds, to the microsecond.
    var milliseconds: Double
    /// The rows a query wrote, for responses that ran one.
    var rows: Int?
    /// What failed, for a request that failed.
    var failure: String?

    /// `info` for a request that did not fail; `warning` for a refusal whose cause is logged
    /// (a 4xx: the caller's, or a grant an operator must add); `error` for any other failure.
    var level: Logger.Level {
        guard self.failure != nil else { return .info }
        return (400..<500).contains(self.status) ? .warning : .error
    }
    var message: Logger.Message { self.failure == nil ? "request" : "request failed" }

    /// The fields as swift-log metadata.
    var metadata: Logger.Metadata {
        var metadata: Logger.Metadata = [
            "request.id": .string(self.requestID),
            "trace.id": .string(self.traceID),
            "span.id": .string(self.spanID),
            "http.method": .string(self.method),
            "http.path": .string(String(self.path)),
            "http.status": .stringConvertible(self.status),
            "http.bytes": .stringConvertible(self.bytes),
            "duration.ms": .stringConvertible(self.milliseconds),
        ]
        if let rows = self.rows { metadata["query.rows"] = .stringConvertible(rows) }
        if let failure = self.failure { metadata["error"] = .string(failure) }
        return metadata
    }

    /// Writes the fields into `line`, in the sorted order of their keys (as ``LineLogHandler``
    /// writes metadata).
    func writeFields(to line: inout LineLogHandler.LineBuilder) {
        line.field("duration.ms", double: self.milliseconds)
        if let failure = self.failure { line.field("error", string: failure) }
        line.field("http.bytes", integer: self.bytes)
        line.field("http.method", string: self.method)
        line.field("http.path", string: self.path)
        line.field("http.status", integer: self.status)
        if let rows = self.rows { line.field("query.rows", integer: rows) }
        line.field("request.id", string: self.requestID)
        line.field("span.id", string: self.spanID)
        line.field("trace.id", string: self.traceID)
    }
}
