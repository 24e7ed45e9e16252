import HTTPTypes

/// How a ``SpoutClient`` talks to its server.
public struct SpoutClientConfiguration: Sendable {
    /// How the server writes dates: match its `dateFormat` (`SPOUT_DATE_FORMAT`).
    public var dateFormat: SpoutDateFormat
    /// The representation streamed rows are asked for (`Accept`); both are decoded as they
    /// arrive, and the response's `Content-Type` decides which splitter reads it.
    public var rowFormat: RowFormat
    /// Header fields sent with every request (an API key:
    /// `[HTTPField.Name("X-API-Key")!: "…"]`, a token: `[.authorization: "Bearer …"]`).
    public var headers: HTTPFields
    /// The on-disk response cache; nil (the default) caches nothing.
    public var cache: SpoutCacheConfiguration?
    /// When a GET that got no response is sent again (3 attempts by default).
    public var retry: SpoutRetryPolicy
    /// Where bearer tokens come from; nil sends only ``headers``. Its token replaces an
    /// `Authorization` field of ``headers``.
    public var tokenProvider: SpoutTokenProvider?

    /// The body format asked for by ``SpoutClient/rows(_:path:query:allPages:)``.
    public enum RowFormat: Sendable {
        /// `Accept: application/json`: one JSON array.
        case jsonArray
        /// `Accept: application/x-ndjson`: one JSON object a line.
        case jsonLines

        var accept: String {
            switch self {
            case .jsonArray: return "application/json"
            case .jsonLines: return "application/x-ndjson"
            }
        }
    }

    public init(
        dateFormat: SpoutDateFormat = .epochMilliseconds, rowFormat: RowFormat = .jsonArray,
        headers: HTTPFields = [:], cache: SpoutCacheConfiguration? = nil,
        retry: SpoutRetryPolicy = SpoutRetryPolicy(), tokenProvider: SpoutTokenProvider? = nil
    ) {
        self.retry = retry
        self.tokenProvider = tokenProvider
        self.dateFormat = dateFormat
        self.rowFormat = rowFormat
        self.headers = headers
        self.cache = cache
    }
}
