import SpoutCore

/// What a route handler returns: a status, extra headers and a body.
///
/// The layer adds `Content-Type`, `Content-Length` or chunked framing, `X-Request-Id` and
/// `Connection` itself.
public struct Response: Sendable {
    public enum Body: Sendable {
        /// No body (`Content-Length: 0`; none at all for 204 and 304).
        case empty
        /// A body known in full.
        case bytes([UInt8], contentType: String)
        /// Rows to query and stream in the negotiated format.
        case rows(RowResult)
    }

    public var status: Int
    public var headers: HeaderFields
    public var body: Body

    public init(status: Int = 200, headers: HeaderFields = HeaderFields(), body: Body = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// Streams `stream` from `database` in the format the client accepts (`Accept`).
    ///
    /// - Parameters:
    ///   - shape: `.array` for every row, `.object`/`.scalar` for the first row (404 when none).
    ///   - readOnly: run inside `BEGIN READ ONLY` on a read-only connection.
    ///   - statementTimeout: the statement timeout to set on the connection, if any.
    ///   - onReplica: a read replica of `database` may answer (read-only work only).
    public static func rows(
        _ stream: RowStream, database: Database, shape: ResultShape = .array, readOnly: Bool = true,
        statementTimeout: Duration? = nil, onReplica: Bool = false, status: Int = 200, headers: HeaderFields = HeaderFields()
    ) -> Response {
        Response(
            status: status, headers: headers,
            body: .rows(
                RowResult(
                    stream: stream, database: database, shape: shape, readOnly: readOnly, statementTimeout: statementTimeout,
                    onReplica: onReplica))
        )
    }

    /// A complete body with its content type (HTML docs, an OpenAPI document).
    public static func bytes(
        _ bytes: [UInt8], contentType: String, status: Int = 200, headers: HeaderFields = HeaderFields()
    ) -> Response {
        Response(status: status, headers: headers, body: .bytes(bytes, contentType: contentType))
    }

    public static func text(
        _ text: String, contentType: String = "text/plain; charset=utf-8", status: Int = 200,
        headers: HeaderFields = HeaderFields()
    ) -> Response {
        self.bytes(Array(text.utf8), contentType: contentType, status: status, headers: headers)
    }

    /// 204 No Content.
    public static func noContent(headers: HeaderFields = HeaderFields()) -> Response {
        Response(status: 204, headers: headers, body: .empty)
    }

    /// 201 Created with a `Location` header.
    public static func created(location: String, body: Body = .empty) -> Response {
        Response(status: 201, headers: ["Location": location], body: body)
    }
}

/// A row stream to run and stream as a response body.
public struct RowResult: Sendable {
    public var stream: RowStream
    public var database: Database
    public var shape: ResultShape
    public var readOnly: Bool
    public var statementTimeout: Duration?
    /// Whether a read replica of `database` may answer (``Database/lease(readOnly:onReplica:)``).
    public var onReplica: Bool
    /// How the response is validated (`ETag`, `If-None-Match`); nil: it is not.
    public var validator: Validator?
    /// For a page of a paged endpoint: the `Link` target of the next page, made from how the
    /// page ended, or nil on the last page. A paged result is sent whole (its size is bounded).
    public var nextPage: (@Sendable (StreamOutcome) throws -> String?)?

    /// The validators a row response can carry.
    public enum Validator: Sendable {
        /// A strong `ETag` digesting the body: the result is read whole before the head is sent.
        case body
        /// A weak `ETag` digesting what `version` (one value, such as a counter or the time of
        /// the last change) returns, read before the rows: a match answers 304 without
        /// running the stream.
        case version(RowStream)
    }

    /// Whether the rows are read whole before the head is sent: single-row shapes, pages, and
    /// whatever carries a body digest.
    var isSentWhole: Bool {
        if self.shape != .array || self.nextPage != nil { return true }
        if case .body? = self.validator { return true }
        return false
    }

    /// The same result, to be answered by the primary only.
    var onPrimary: RowResult {
        var result = self
        result.onReplica = false
        return result
    }

    public init(
        stream: RowStream, database: Database, shape: ResultShape, readOnly: Bool, statementTimeout: Duration?,
        onReplica: Bool = false
    ) {
        self.stream = stream
        self.database = database
        self.shape = shape
        self.readOnly = readOnly
        self.statementTimeout = statementTimeout
        self.onReplica = onReplica
    }
}

/// An error a handler throws to answer with a specific status and a JSON body
/// `{"error": message}`; with `parameter`, the body names it too.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    public var status: Int
    public var message: String
    public var headers: HeaderFields

    public init(status: Int, message: String, headers: HeaderFields = HeaderFields()) {
        self.status = status
        self.message = message
        self.headers = headers
    }

    public var description: String { "HTTP \(self.status): \(self.message)" }
}
