import HTTPTypes
import SpoutCore
import SpoutHTTP

/// A row stream to answer a request with: read on a lease of `database` and sent whole or
/// streamed in the format the client accepts, by ``RowResponder`` (the one place that decides
/// how a row request runs).
public struct RowResult: ResponseProducer {
    public var stream: RowStream
    public var database: Database
    public var shape: ResultShape
    public var readOnly: Bool
    public var statementTimeout: Duration?
    /// Whether a read replica of `database` may answer (``SpoutCore/DatabaseWork/onReplica``).
    public var onReplica: Bool
    /// How the response is validated (`ETag`, `If-None-Match`); nil: it is not.
    public var validator: Validator?
    /// The one format offered (a stored file's ``SpoutCore/OutputFormat/raw(mediaType:)``),
    /// sent when `Accept` allows it (else 406); nil offers JSON, JSON Lines and CSV
    /// (``SpoutHTTP/ContentNegotiation``).
    public var format: OutputFormat?
    /// For a stored file (``format`` raw) whose media type is stored beside it: the column
    /// label holding each file's type (`image/heic`). It is sent as `Content-Type` when it lies
    /// within the format's type (a range such as `image/*`), `application/octet-stream`
    /// otherwise; `Accept` is checked against it once the row is read. nil: the format's type.
    public var mediaTypeColumn: String? = nil
    /// For a page of a paged endpoint: the `Link` target of the next page, made from how the
    /// page ended, or nil on the last page. A paged result is sent whole (its size is bounded).
    public var nextPage: (@Sendable (StreamOutcome) throws -> String?)?
    /// Who the request runs as in the database (role and claims, PostgreSQL) and its trace
    /// context; nil for none. Set for the request's transaction only: on the database's
    /// threads by ``DatabaseConnection/runRequest(statementTimeout:transaction:session:_:)``,
    /// event-driven first in each implicit transaction of the pipeline.
    public var session: RequestSession? = nil

    /// The validators a row response can carry.
    public enum Validator: Sendable {
        /// A strong `ETag` digesting the body: the result is read whole before the head is sent.
        case body
        /// A weak `ETag` digesting what `version` (one value, such as a counter or the time of
        /// the last change) returns, read before the rows: a match answers 304 without
        /// running the stream.
        case version(RowStream)
    }

    /// Whether the rows are read whole before the head is sent: single-row shapes (unless they
    /// stream, ``streamsSingleRow``), pages, and whatever carries a body digest.
    var isSentWhole: Bool {
        if (self.shape != .array && !self.streamsSingleRow) || self.nextPage != nil { return true }
        if case .body? = self.validator { return true }
        return false
    }

    /// Whether a single-row result streams like an array does: when its details have details
    /// of their own (a department, its employees and their salaries), which may be far more
    /// rows than a body read whole should hold. Such a row has no body digest (`ETag` only
    /// from a `version`).
    public var streamsSingleRow: Bool {
        self.shape != .array && self.stream.attachments.contains { !$0.stream.attachments.isEmpty }
    }

    /// The database work the rows need (``SpoutCore/Database/withSession(_:observer:retryOnPrimary:_:)``):
    /// a read in the read's transaction rules, or statements that commit on their own.
    var work: DatabaseWork {
        DatabaseWork(
            readOnly: self.readOnly, onReplica: self.onReplica, isStream: !self.isSentWhole, statementTimeout: self.statementTimeout,
            transaction: self.readOnly ? .read : .none, session: self.session)
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

extension Response {
    /// Answers with `stream`, read from `database` in the format the client accepts (`Accept`).
    ///
    /// - Parameters:
    ///   - shape: `.array` for every row, `.object`/`.scalar` for the first row (404 when none).
    ///   - readOnly: read on a read-only lease, in the read transaction rules of
    ///     ``SpoutCore/RequestTransaction/read`` (SQLite: one read-only transaction; PostgreSQL:
    ///     a read-only session, a cursor's own transaction when it needs one).
    ///   - statementTimeout: the statement timeout to set on the connection, if any.
    ///   - onReplica: a read replica of `database` may answer (read-only work only).
    public static func rows(
        _ stream: RowStream, database: Database, shape: ResultShape = .array, readOnly: Bool = true,
        statementTimeout: Duration? = nil, onReplica: Bool = false, status: HTTPResponse.Status = .ok,
        headers: HTTPFields = HTTPFields()
    ) -> Response {
        Response(
            status: status, headers: headers,
            body: .produced(
                RowResult(
                    stream: stream, database: database, shape: shape, readOnly: readOnly, statementTimeout: statementTimeout,
                    onReplica: onReplica))
        )
    }
}
