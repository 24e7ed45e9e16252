import HTTPTypes
import SpoutCore
import SpoutHTTP

/// What an endpoint answers with.
public enum EndpointResult: String, Sendable, Hashable, CaseIterable {
    /// Every row, as a streamed JSON array (JSON Lines and CSV when asked for).
    case rows
    /// The first row as one object; 404 when there is none.
    case object
    /// The first column of the first row, as a bare value; 404 when there is none.
    case scalar
    /// 204 No Content when the statement changed at least one row; 404 when it changed none.
    case none
    /// 201 Created with a `Location` header built from ``Endpoint/location`` and, when the
    /// statement returns a row (`INSERT ... RETURNING`), that row as the body.
    case created
    /// The first column of the first row as the body, as it is stored (a `bytea` or BLOB; text
    /// as its UTF-8), with ``Endpoint/mediaType`` as its `Content-Type` (an image, a PDF); 404
    /// when there is no row or the value is NULL.
    case bytes

    /// The row-stream shape of the result, for results that have rows.
    var shape: ResultShape? {
        switch self {
        case .rows: return .array
        case .object, .created: return .object
        case .scalar, .bytes: return .scalar
        case .none: return nil
        }
    }
}

/// The SQL of an endpoint or a detail: portable text and per-dialect replacements.
public struct EndpointSQL: Sendable, Hashable {
    /// The SQL used on every database without an override.
    public var portable: String
    /// Replacements for one dialect (`sql/postgres/<path>`, `sql/sqlite/<path>`).
    public var overrides: [SQLDialect: String]
    /// Where the portable text is: an SQL file's path, or the endpoint file when inline.
    public var file: String
    /// The line of the SQL's first line in ``file``.
    public var firstLine: Int
    /// The override files, by dialect.
    public var overrideFiles: [SQLDialect: String]

    public init(
        portable: String, overrides: [SQLDialect: String] = [:], file: String, firstLine: Int = 1,
        overrideFiles: [SQLDialect: String] = [:]
    ) {
        self.portable = portable
        self.overrides = overrides
        self.file = file
        self.firstLine = firstLine
        self.overrideFiles = overrideFiles
    }

    /// The text to run on `dialect`: its override when there is one, else the portable text.
    public func text(for dialect: SQLDialect) -> String {
        self.overrides[dialect] ?? self.portable
    }
}

/// An array attached to every row when the request selects it through the endpoint's
/// details parameter (`?details=titles`). A detail may have details of its own, selected by
/// their dotted path (`?details=employees&details=employees.titles`), to the depth the
/// configuration allows (`maxDetailDepth`).
public struct EndpointDetail: Sendable, Hashable {
    /// The detail's name: the last part of the path that selects it and the key its array
    /// appears under. Never holds a `.` (the path separator).
    public var name: String
    /// The child query; its parameters bind from its parent row's column labels first, then
    /// from the endpoint's arguments (see `RowStream.attach`).
    public var sql: EndpointSQL
    public var summary: String?
    /// The column labels visible in the SQL's outermost select list (for documentation).
    public var labels: [String]
    /// The details of this detail's rows, in declaration order.
    public var details: [EndpointDetail]

    public init(name: String, sql: EndpointSQL, summary: String? = nil, labels: [String] = [], details: [EndpointDetail] = []) {
        self.name = name
        self.sql = sql
        self.summary = summary
        self.labels = labels
        self.details = details
    }

    /// The separator of a detail path (`employees.titles`).
    public static let pathSeparator: Character = "."

    /// The paths that select `details` and their details, depth first in declaration order,
    /// each prefixed with `prefix` (`employees`, `employees.titles`, ...).
    public static func paths(of details: [EndpointDetail], prefix: String = "") -> [String] {
        details.flatMap { detail in
            let path = prefix + detail.name
            return [path] + Self.paths(of: detail.details, prefix: path + String(Self.pathSeparator))
        }
    }

    /// How many levels `details` nest (0 for none, 1 for details without details of their own).
    public static func depth(of details: [EndpointDetail]) -> Int {
        details.map { 1 + Self.depth(of: $0.details) }.max() ?? 0
    }
}

/// One method on one path, as declared in an endpoint file.
public struct Endpoint: Sendable {
    public var method: HTTPRequest.Method
    /// The path template: `/employees/{employeeNumber}`.
    public var path: String
    public var summary: String?
    public var sql: EndpointSQL
    /// Every parameter the request may carry: path keys, declared parameters and, when the
    /// endpoint has details, the details parameter (a list of strings limited to the details'
    /// paths, ``EndpointDetail/paths(of:prefix:)``).
    public var parameters: [Parameter]
    public var result: EndpointResult
    public var details: [EndpointDetail]
    /// The name of the parameter that selects details (`details` unless renamed); nil when the
    /// endpoint has none.
    public var detailsParameter: String?
    /// The statement timeout; nil uses the configuration's default.
    public var timeout: Duration?
    /// At most this many rows are returned (``EndpointResult/rows`` only).
    public var rowLimit: Int?
    /// Whether the statements run in a read-only transaction on a read-only connection.
    public var readOnly: Bool
    /// Where a read-only endpoint may read: ``Consistency/replica`` (the default) lets a read
    /// replica answer when `database.replicaUrls` has any; ``Consistency/primary`` always
    /// reads on the primary (read-your-writes).
    public var consistency: Consistency = .replica
    /// The `Location` of a ``EndpointResult/created`` result: a path with `{name}`
    /// placeholders (`/pets/{name}`, `/books/{id}`), each a parameter or, when no parameter
    /// has its name, a column of the row the statement returns (``locationColumns``).
    public var location: String?
    /// The `Content-Type` of a ``EndpointResult/bytes`` result (`image/png`); for an endpoint
    /// with a ``body``, the media type its body must have (`image/*` allowed), nil for any.
    public var mediaType: String?
    /// The parameter the whole request body is (an upload: `PUT /pets/{name}/photo` with an
    /// image), instead of a form or JSON body of arguments; nil for the latter.
    public var body: String? = nil
    /// With a ``body``: the parameter that receives the body's media type (`image/heic`), to be
    /// stored beside it; nil for none.
    public var mediaTypeParameter: String? = nil
    /// The largest request body a POST, PUT or PATCH takes (`maxBodyBytes`), instead of the
    /// server's `server.limits.maxBodyBytes`; nil: the server's.
    public var maxBodyBytes: Int? = nil
    /// Whether the endpoint also takes many records in one request (`bulk: true`), at
    /// ``bulkPath``: a JSON array, JSON Lines or CSV body streamed in, each record running the
    /// statement, all in one transaction (``BulkWrite``).
    public var bulk = false

    /// Where the endpoint takes many records: `<path>/bulk`; nil unless ``bulk``.
    public var bulkPath: String? {
        guard self.bulk else { return nil }
        return self.path.hasSuffix("/") ? self.path + "bulk" : self.path + "/bulk"
    }
    /// For a ``EndpointResult/bytes`` result: the column label holding each file's media type,
    /// sent as `Content-Type` when it lies within ``mediaType`` (then a range such as
    /// `image/*`); nil: ``mediaType`` is every file's type.
    public var mediaTypeColumn: String? = nil
    /// The group the endpoint is listed under in the documentation: the endpoint file's name
    /// without extension (`employees`).
    public var tag: String
    /// The endpoint file and the line of the method's key, for messages.
    public var file: String
    public var line: Int?
    /// The column labels visible in the SQL's outermost select list, in order (for
    /// documentation); ``labelsComplete`` is false when the list has `*` or expressions
    /// without a label.
    public var labels: [String]
    public var labelsComplete: Bool
    /// The keys a request needs, from the endpoint file's `auth` section when it covers this
    /// endpoint's method; nil when the endpoint is open.
    public var apiKeys: APIKeySet? = nil
    /// What a request's bearer token must satisfy, from the endpoint file's `auth: {token:
    /// jwt}` when it covers this endpoint's method; nil when the endpoint takes no token.
    public var tokenPolicy: TokenPolicy? = nil
    /// The endpoint's own `auth` in its file, which replaces the file's for it; nil when it has
    /// none (the file's applies, or `auth: none` opened it).
    public var ownAuth: EndpointAuth? = nil
    /// Keyset pagination (`page:`): a request with `pageSize` or `after` gets one page and a
    /// `Link` to the next; nil when the endpoint is not paged.
    public var page: EndpointPage? = nil
    /// Sync reads (`sync:`): a request with `since` gets what changed since its cursor; nil
    /// when the endpoint does not sync.
    public var sync: EndpointSync? = nil
    /// `Cache-Control` for the endpoint's successful GET responses (`cache:`).
    public var cache: EndpointCache? = nil
    /// A statement returning one value that changes whenever the result does (`versionSql`):
    /// a streamed result's weak `ETag`, checked before the rows are read.
    public var versionSQL: EndpointSQL? = nil

    /// What a query-string key that names no parameter of ``parameters`` (nor `api`) gets
    /// (`unknownParameters:`): a 400 naming it (``UnknownParameters/refuse``, the default) or
    /// nothing (``UnknownParameters/ignore``).
    public var unknownParameters: UnknownParameters = .refuse

    /// Whether a request needs an API key.
    public var requiresAPIKey: Bool { self.apiKeys != nil }

    /// The placeholders of ``location`` that name no parameter: columns of the returned row
    /// (`INSERT … RETURNING id` for `/books/{id}`), read from it when the write has run.
    public var locationColumns: [String] {
        guard let location = self.location else { return [] }
        let names = Set(self.parameters.map(\.name))
        return LocationTemplate.placeholders(in: location).filter { !names.contains($0) }
    }

    /// The query-string keys a request may carry: every parameter that is not a path key, in
    /// declaration order; `api` (the documentation) is taken too, and not listed.
    public var queryParameterNames: [String] {
        let keys = Set(self.pathKeys)
        return self.parameters.map(\.name).filter { !keys.contains($0) }
    }

    /// The path keys of ``path`` in order.
    public var pathKeys: [String] { EndpointPath.keys(of: self.path) }

    /// `GET /employees` (for messages and logs).
    public var title: String { "\(self.method) \(self.path)" }
}

/// How a paged endpoint pages (endpoint files: `page: {key: [...], size: 100, maxSize: 1000}`).
public struct EndpointPage: Sendable, Hashable {
    /// The parameter that asks for a page of that many rows.
    public static let sizeParameter = "pageSize"
    /// The parameter carrying the cursor of the next page (from the `Link` header).
    public static let afterParameter = "after"

    /// The result columns (labels) that order the pages and identify a row: never NULL,
    /// unique taken together.
    public var key: [String]
    /// The page size when a request gives `after` without `pageSize`.
    public var size: Int
    /// The largest `pageSize` accepted (a page is read whole before it is sent).
    public var maxSize: Int
}

/// The `Cache-Control` of an endpoint (endpoint files: `cache: {maxAge: 60, public: true}`).
public struct EndpointCache: Sendable, Hashable {
    /// How many seconds a response stays fresh (`max-age`).
    public var maxAge: Int
    /// Whether shared caches (proxies, CDNs) may keep it (`public`), or only the client
    /// (`private`, the default: responses may depend on an API key).
    public var isPublic: Bool

    /// The field value.
    public var headerValue: String { "\(self.isPublic ? "public" : "private"), max-age=\(self.maxAge)" }
}

/// Which database a read-only endpoint reads from (endpoint files: `consistency:`).
public enum Consistency: String, Sendable, Hashable, CaseIterable {
    /// Any available read replica, else the primary: fresh as the replica's replay.
    case replica
    /// Always the primary: sees every committed write at once.
    case primary
}

/// Path-template helpers.
enum EndpointPath {
    static func segments(of path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }

    static func isKey(_ segment: Substring) -> Bool {
        segment.hasPrefix("{") && segment.hasSuffix("}") && segment.count > 2
    }

    static func keys(of path: String) -> [String] {
        self.segments(of: path).filter(self.isKey).map { String($0.dropFirst().dropLast()) }
    }

    /// The template with every key written `{}`: two templates that route the same way have
    /// the same shape.
    static func shape(of path: String) -> String {
        "/" + self.segments(of: path).map { self.isKey($0) ? "{}" : String($0) }.joined(separator: "/")
    }
}

/// What an endpoint does with a query-string key that names none of its parameters.
public enum UnknownParameters: String, Sendable, Hashable, CaseIterable {
    /// 400 `{"error":"unknown parameter","parameter":"lastname","accepted":[…]}`: a misspelled
    /// filter is never answered with unfiltered rows.
    case refuse
    /// The key is ignored (cache busters, parameters of another layer).
    case ignore
}
