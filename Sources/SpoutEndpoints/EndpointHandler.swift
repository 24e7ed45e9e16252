import Foundation
import HTTPTypes
import Logging
import SpoutCore
import SpoutHTTP

/// Serves one endpoint on one database.
///
/// Read-only endpoints with rows answer with a ``RowResult``, which ``RowResponder`` runs on a
/// read-only lease (PostgreSQL: a read-only session, with a read-only transaction only where a
/// stream reads through a cursor; SQLite: a read-only connection in one transaction), on a
/// read replica when there are any and the endpoint allows it. Everything else (writes, `none`, `created`) runs here, in one
/// read-write transaction that commits only when the statement and the encoding succeed; its
/// result (at most what the statement returns, typically one row) is buffered before it is
/// sent, so nothing is half-committed when the client sees an error.
struct EndpointHandler: Sendable {
    let endpoint: Endpoint
    let database: Database
    let timeout: Duration?
    let documentation: APIDocumentation
    let logger: Logger
    /// The endpoint's SQL and its details' SQL for the database's dialect, parsed once here
    /// (nil when it does not parse: the request then reports the error). The endpoint's SQL
    /// and its pages' are reduced per request for the optional filters it gives (``FilteredSQL``).
    let sql: String
    let parsed: FilteredSQL?
    let details: DetailTree
    /// The SQL of the first and of the later pages, for a paged endpoint.
    let pages: (first: FilteredSQL, next: FilteredSQL)?
    /// The endpoint's `versionSql`, parsed.
    let version: ParsedSQL?
    /// The keys page cursors are sealed and opened with.
    let keys: InstanceKeys
    /// `Cache-Control` (when the endpoint sets `cache`) and `Vary` for a read's response: the
    /// format follows `Accept`, the coding `Accept-Encoding`.
    let cachingHeaders: HTTPFields
    /// What every error answer carries (``SpoutHTTP/Route/errorFields``): for an endpoint with a
    /// token policy, `Cache-Control: private` and the `Vary` of its credentials, since its
    /// 404s and 403s depend on who asks as much as its 200s; nothing otherwise.
    var errorFields: HTTPFields {
        guard self.endpoint.tokenPolicy != nil else { return HTTPFields() }
        var fields: HTTPFields = [.cacheControl: "private"]
        if let vary = self.cachingHeaders[.vary] { fields[.vary] = vary }
        return fields
    }
    /// The `identity` settings and the token verifier, for an endpoint with a ``TokenPolicy``.
    let identity: (settings: SpoutConfiguration.Identity, verifier: TokenVerifier?)
    /// The claim parameters the endpoint's statements use (`claims.sub`).
    let claimNames: Set<String>
    /// ``Endpoint/queryParameterNames``, in order and as a set.
    let queryNames: (ordered: [String], set: Set<String>)
    /// Whether the request's trace context goes into its transaction (``session(for:_:)``).
    let tracesIntoDatabase: Bool
    /// Names the parameter behind a write's unique or NOT NULL violation; nil for reads.
    let constraints: ConstraintTracer?
    /// Whether sync reads may run (``EndpointSet/prepareSync(on:)`` has succeeded).
    let syncState: SyncState
    /// Where writes' answers by idempotency key are kept, and for how long.
    let idempotency: IdempotencyState
    /// For a write: what its `If-Match` and `If-None-Match` are compared with; nil when no GET
    /// gives it (``EndpointSet/representation(of:)``), and then those fields are a 400.
    let representation: CurrentRepresentation?
    /// The live notices of the database, and the syncable endpoints that serve them (named by
    /// the 406 of an endpoint that does not); nil: not served here.
    let notices: (hub: LiveNotices, syncable: [String])?

    init(
        endpoint: Endpoint, database: Database, timeout: Duration?, documentation: APIDocumentation, logger: Logger,
        keys: InstanceKeys, tracesIntoDatabase: Bool = false,
        identity: (settings: SpoutConfiguration.Identity, verifier: TokenVerifier?) = (.init(), nil), syncState: SyncState = SyncState(),
        idempotency: IdempotencyState = IdempotencyState(), representation: (endpoint: Endpoint, sources: [String])? = nil,
        notices: (hub: LiveNotices, syncable: [String])? = nil
    ) {
        self.representation = representation.map { CurrentRepresentation(endpoint: $0.endpoint, sources: $0.sources, dialect: database.dialect) }
        self.notices = notices
        self.syncState = syncState
        self.idempotency = idempotency
        self.identity = identity
        self.tracesIntoDatabase = tracesIntoDatabase
        self.endpoint = endpoint
        self.database = database
        self.timeout = timeout
        self.documentation = documentation
        self.logger = logger
        self.keys = keys
        self.sql = endpoint.sql.text(for: database.dialect)
        self.parsed = try? FilteredSQL(self.sql, dialect: database.dialect)
        self.details = DetailTree(endpoint.details, dialect: database.dialect)
        // The endpoint file's checks made sure these parse and page on every dialect.
        if let page = endpoint.page, let keyset = try? KeysetQuery(self.sql, key: page.key),
            let first = try? FilteredSQL(keyset.first, dialect: database.dialect),
            let next = try? FilteredSQL(keyset.next, dialect: database.dialect)
        {
            self.pages = (first, next)
        } else {
            self.pages = nil
        }
        var caching: HTTPFields = [.vary: "Accept, Accept-Encoding"]
        if endpoint.tokenPolicy != nil {
            // The response depends on who asks: never stored by a shared cache, and a private
            // cache keys it by the credentials.
            caching = [.vary: "Accept, Accept-Encoding, Authorization, X-API-Key"]
            caching.append(HTTPField(name: .cacheControl, value: endpoint.cache.map { "private, max-age=\($0.maxAge)" } ?? "private"))
        } else if let cache = endpoint.cache {
            caching.append(HTTPField(name: .cacheControl, value: cache.headerValue))
        }
        self.cachingHeaders = caching
        self.version = endpoint.versionSQL.flatMap { try? ParsedSQL($0.text(for: database.dialect), dialect: database.dialect) }
        var names = Set(self.parsed?.written.parameterNames ?? [])
        names.formUnion(self.details.parameterNames)
        names.formUnion(self.version?.parameterNames ?? [])
        self.claimNames = names.filter { RequestIdentity.claimPath(of: $0) != nil }
        self.queryNames = (endpoint.queryParameterNames, Set(endpoint.queryParameterNames))
        self.constraints = endpoint.readOnly ? nil : ConstraintTracer(sql: self.sql, parameterNames: Set(endpoint.parameters.map(\.name)))
    }

    /// Who sends `request`, for an endpoint with a ``TokenPolicy``: a refused token is a 401 or
    /// 403; nil for an endpoint without one.
    func authenticate(_ request: Request) async throws -> RequestIdentity? {
        guard let policy = self.endpoint.tokenPolicy else { return nil }
        return try await RequestIdentity.authenticate(
            authorization: request.headers[values: .authorization].first, apiKey: request.headers[values: .apiKey].first, policy: policy,
            verifier: self.identity.verifier, settings: self.identity.settings)
    }

    /// Refuses the first query-string key that names no parameter of the endpoint, unless it
    /// ignores them (``UnknownParameters``); `api` is always taken.
    func checkKnown(_ query: RawArguments) throws(ArgumentError) {
        guard self.endpoint.unknownParameters == .refuse else { return }
        let accepted = self.queryNames.set
        if let unknown = query.keys.first(where: { $0 != "api" && !accepted.contains($0) }) {
            throw ArgumentError(.unknown(accepted: self.queryNames.ordered), parameter: unknown)
        }
    }

    /// The parameters the HTTP layer converts. For GET endpoints, required query parameters
    /// are declared optional to it and checked here, so that `?api` works without them. The
    /// details parameter's paths are checked here too (``DetailTree/selection(_:parameter:)``),
    /// so that a 400 lists the names allowed at the level of the mistake.
    var routeParameters: [Parameter] {
        let keys = self.endpoint.pathKeys
        return self.endpoint.parameters.map { parameter in
            var relaxed = parameter
            if self.endpoint.method == .get && !keys.contains(parameter.name) { relaxed.isRequired = false }
            if parameter.name == self.endpoint.detailsParameter { relaxed.allowedValues = nil }
            return relaxed
        }
    }

    @Sendable
    func handle(_ request: Request) async throws -> Response {
        if request.method == .get || request.method == .head, request.hasQueryKey("api") {
            return self.documentation.response(for: request.path)
        }
        let asksForEvents = request.method == .get && LiveNoticeRequest.asksForEvents(request.headers[values: .accept])
        if asksForEvents && self.endpoint.sync == nil { throw self.noEventStream() }
        // Who asks is decided first: a refused token is a 401 or 403 before any SQL runs.
        let identity = try await self.authenticate(request)
        var request = request
        identity?.bind(self.claimNames.union(self.representation?.claimNames ?? []), into: &request.arguments)
        try self.checkRequired(request.arguments)
        try self.checkKnown(request.query)
        let selected = try self.selectedDetails(request)
        let session = self.session(for: identity, request)
        if asksForEvents, let sync = self.endpoint.sync {
            return try await self.liveNotices(sync, request: request, identity: identity, session: session)
        }
        if let sync = self.endpoint.sync, case .text(let since)? = request.arguments[EndpointSync.sinceParameter] {
            return try await self.syncRead(sync, since: since, request: request, details: selected, identity: identity, session: session)
        }
        if let page = try await self.pageRequest(request) {
            return try await self.page(page, request: request, details: selected, session: session)
        }
        let stream = try self.stream(arguments: request.arguments, details: selected)
        if self.endpoint.readOnly, let shape = self.endpoint.result.shape, self.endpoint.result != .created {
            var rows = RowResult(
                stream: stream, database: self.database, shape: shape, readOnly: true, statementTimeout: self.timeout,
                onReplica: self.endpoint.consistency == .replica)
            rows.session = session
            if self.endpoint.result == .bytes {
                rows.format = .raw(mediaType: self.endpoint.mediaType ?? "application/octet-stream")
                if let column = self.endpoint.mediaTypeColumn {
                    // Read from the row as its key: how the row ended is what the response reports.
                    rows.mediaTypeColumn = column
                    rows.stream.keyLabels = [column]
                }
            }
            if shape != .array && !rows.streamsSingleRow {
                rows.validator = .body
            } else if let version = self.version, identity == nil {
                // A stream (a single row with details of details streams too) can only be
                // tagged by a version. A version counts every caller's rows alike: with an
                // identity its tag could confirm another caller's body, so such responses go
                // untagged.
                rows.validator = .version(RowStream(version, request.arguments))
            }
            return Response(headers: self.cachingHeaders, body: .produced(rows))
        }
        let subject = identity?.claims?.value(at: "sub")?.sqlValue.requestText(null: "", bytes: { _ in "" })
        let key = self.endpoint.readOnly ? nil : try IdempotencyKey(request, endpoint: self.endpoint.title, subject: subject)
        let condition = self.endpoint.readOnly ? nil : try self.condition(request)
        // A write's rows are read whole: no server-side cursor, which PostgreSQL does not
        // declare for INSERT/UPDATE/DELETE ... RETURNING.
        var written = stream
        written.readsWhole = true
        return try await self.runInTransaction(
            written, request: request, session: session, identified: identity != nil, idempotency: key, condition: condition)
    }

    /// A write's conditions and the statement that reads what they are compared with; nil
    /// when the request sends none. A condition on a write without a current representation
    /// is a 400 naming the field: ignoring it would let the write overwrite what the client
    /// meant to protect.
    private func condition(_ request: Request) throws -> ConditionalWrite? {
        guard let conditions = WriteConditions(request) else { return nil }
        guard let representation = self.representation else {
            throw HTTPError(
                status: .badRequest,
                message:
                    "\(conditions.fieldName) is not supported by \(self.endpoint.title): no GET endpoint of one row at the resource's path gives its current representation"
            )
        }
        let current = try representation.stream(on: self.database, writeArguments: request.arguments)
        return ConditionalWrite(conditions: conditions, current: current, shape: representation.shape)
    }


    // MARK: Sync reads

    /// A sync read (``SyncResult``) from the cursor `since` (`0`: the whole result); a cursor
    /// that does not open here is a 400 naming `since`.
    private func syncRead(
        _ sync: EndpointSync, since text: String, request: Request, details: Set<String>, identity: RequestIdentity?,
        session: RequestSession?
    ) async throws -> Response {
        guard self.syncState.isReady else {
            throw HTTPError(
                status: .serviceUnavailable, message: "sync reads are not ready: the database's change log has not been checked since the start",
                headers: [.retryAfter: "5"])
        }
        let context = self.syncContext(request.arguments, identity: identity)
        var opened: OpenedSyncCursor?
        if text != EndpointSync.fromTheBeginning {
            switch await self.openSyncCursor(text, context: context) {
            case .success(let value): opened = value
            case .failure(let refused): throw ArgumentError(.rejected(refused.reason), parameter: EndpointSync.sinceParameter, value: text)
            }
        }
        // In hand before the read's own session starts (reading the keys takes a lease).
        let cursorKey = try await self.keys.sealingCursorKey()
        var result = SyncResult(
            stream: try self.stream(arguments: request.arguments, details: details), database: self.database, sync: sync,
            since: opened?.position, statementTimeout: self.timeout, session: session, state: self.syncState,
            seal: { PageCursor(values: [.integer($0)]).sealed(with: cursorKey, context: context) })
        if opened?.keyID == cursorKey.id { result.sentCursor = text }
        return Response(headers: self.cachingHeaders, body: .produced(result))
    }

    /// A sync cursor that opened here: its position, and the id of the key that sealed it.
    private struct OpenedSyncCursor {
        var position: Int64
        var keyID: UInt32
    }

    /// The sync cursor `text` sealed for `context`, or why it does not open here.
    private func openSyncCursor(_ text: String, context: [UInt8]) async -> Result<OpenedSyncCursor, PageCursor.Refused> {
        let notValid = PageCursor.Refused(reason: "sync cursor not valid here (changed, made for another query or caller, or sealed with another key)")
        do {
            let sealed = try PageCursor.Sealed(text)
            switch try await self.keys.openingCursorKey(id: sealed.keyID) {
            case .key(let key):
                if case .integer(let value)? = try sealed.open(with: key, context: context, keyCount: 1).values.first {
                    return .success(OpenedSyncCursor(position: value, keyID: sealed.keyID))
                }
                return .failure(notValid)
            case .retired:
                return .failure(PageCursor.Refused(reason: "sync cursor too old: the key that sealed it was retired by a key rotation; sync again from since=0"))
            case .unknown:
                return .failure(PageCursor.Refused(reason: "sync cursor sealed with a key this server does not hold; sync again from since=0"))
            }
        } catch {
            return .failure(notValid)
        }
    }

    // MARK: Live notices

    /// The 406 of an endpoint that is not syncable, asked for an event stream: it names those
    /// that are.
    private func noEventStream() -> HTTPError {
        let syncable = self.notices?.syncable ?? []
        let alternatives = syncable.isEmpty ? "this service has no syncable endpoint" : "syncable endpoints: " + syncable.joined(separator: ", ")
        return HTTPError(
            status: .notAcceptable,
            message: "not acceptable: \(self.endpoint.title) is not syncable and answers no text/event-stream (live notices); \(alternatives)")
    }

    /// An event stream of live notices (``LiveNoticeStream``) for the caller's result, from the
    /// cursor of `Last-Event-ID` (else `since`, else now); a cursor that does not open here is
    /// a 400 naming where it came from.
    private func liveNotices(_ sync: EndpointSync, request: Request, identity: RequestIdentity?, session: RequestSession?) async throws
        -> Response
    {
        guard let notices = self.notices else {
            throw HTTPError(status: .serviceUnavailable, message: "live notices are not served here", headers: [.retryAfter: "60"])
        }
        guard self.syncState.isReady else {
            throw HTTPError(
                status: .serviceUnavailable, message: "live notices are not ready: the database's change log has not been checked since the start",
                headers: [.retryAfter: "5"])
        }
        let context = self.syncContext(request.arguments, identity: identity)
        var start: Int64?
        if let lastEventID = request.headers[values: LiveNoticeRequest.lastEventID].first {
            switch await self.openSyncCursor(lastEventID, context: context) {
            case .success(let opened): start = opened.position
            case .failure(let refused):
                throw HTTPError(status: .badRequest, message: "Last-Event-ID: \(refused.reason.replacing("sync cursor", with: "event id"))")
            }
        } else if case .text(let text)? = request.arguments[EndpointSync.sinceParameter], text != EndpointSync.fromTheBeginning {
            switch await self.openSyncCursor(text, context: context) {
            case .success(let opened): start = opened.position
            case .failure(let refused): throw ArgumentError(.rejected(refused.reason), parameter: EndpointSync.sinceParameter, value: text)
            }
        }
        let cursorKey = try await self.keys.sealingCursorKey()
        let stream = try self.stream(arguments: request.arguments, details: [])
        var probeSession = session
        probeSession?.traceContext = nil
        let probe = NoticeProbe(
            sql: stream.sql, arguments: stream.arguments, key: sync.key, tables: sync.tables.map(\.logName), session: probeSession,
            statementTimeout: self.timeout)
        let key = NoticeGroup.Key(
            endpoint: self.endpoint.title, context: context,
            session: probeSession.map { RequestSession(role: $0.role, claimsJSON: identity?.claims.map(LiveNoticeRequest.groupingClaims)) })
        let subscription = LiveNotices.Subscription(
            key: key, probe: probe, seal: { PageCursor(values: [.integer($0)]).sealed(with: cursorKey, context: context) }, start: start)
        return Response(
            headers: self.cachingHeaders,
            body: .produced(LiveNoticeStream(notices: notices.hub, subscription: subscription, expires: LiveNoticeRequest.expiry(of: identity))))
    }

    /// What a sync cursor is bound to: this endpoint, the request's arguments except the
    /// cursor, the pages' and the details selected, and who asks (the claims its statements
    /// use, the subject, the role): a cursor made for one caller is refused to another.
    private func syncContext(_ arguments: [String: SQLValue], identity: RequestIdentity?) -> [UInt8] {
        let skipped: Set<String> = [
            EndpointSync.sinceParameter, EndpointPage.sizeParameter, EndpointPage.afterParameter, self.endpoint.detailsParameter ?? "",
        ]
        var bound = self.endpoint.parameters.filter { !skipped.contains($0.name) }.map { ($0.name, arguments[$0.name] ?? .null) }
        for name in self.claimNames.sorted() { bound.append((name, arguments[name] ?? .null)) }
        bound.append(("spout.role", identity?.role.map(SQLValue.text) ?? .null))
        bound.append(("spout.sub", identity?.claims?.value(at: "sub")?.sqlValue ?? .null))
        return PageCursor.context(endpoint: "sync " + self.endpoint.title, arguments: bound)
    }

    // MARK: Pages

    /// A request for one page: its size and where it starts.
    private struct PageRequest {
        var size: Int
        var after: PageCursor?
    }

    /// The page a request asks for (`pageSize`, `after`), nil when it asks for the whole result
    /// or the endpoint is not paged. A size out of range or a cursor that does not open here is
    /// a 400 naming the parameter. Looking up the key a cursor names may read the database's
    /// keys (``InstanceKeys``); a database that does not answer then fails the request.
    private func pageRequest(_ request: Request) async throws -> PageRequest? {
        guard let page = self.endpoint.page, self.pages != nil else { return nil }
        let sizeArgument = request.arguments[EndpointPage.sizeParameter] ?? .null
        let afterArgument = request.arguments[EndpointPage.afterParameter] ?? .null
        if sizeArgument.isNull && afterArgument.isNull { return nil }
        var size = page.size
        if case .integer(let asked) = sizeArgument {
            guard (1...Int64(page.maxSize)).contains(asked) else {
                throw ArgumentError(
                    .rejected("page size out of range (1 to \(page.maxSize))"), parameter: EndpointPage.sizeParameter,
                    value: String(asked))
            }
            size = Int(asked)
        }
        var after: PageCursor?
        if case .text(let text) = afterArgument {
            do {
                let sealed = try PageCursor.Sealed(text)
                switch try await self.keys.openingCursorKey(id: sealed.keyID) {
                case .key(let key):
                    after = try sealed.open(with: key, context: self.cursorContext(request.arguments), keyCount: page.key.count)
                case .retired:
                    throw PageCursor.Refused.retiredKey
                case .unknown:
                    throw PageCursor.Refused.unknownKey
                }
            } catch let refused as PageCursor.Refused {
                throw ArgumentError(.rejected(refused.reason), parameter: EndpointPage.afterParameter, value: text)
            }
        }
        return PageRequest(size: size, after: after)
    }

    /// What a cursor is bound to: this endpoint and the request's arguments except the page's
    /// own and the details selected (a client may change those between pages).
    private func cursorContext(_ arguments: [String: SQLValue]) -> [UInt8] {
        let skipped: Set<String> = [EndpointPage.sizeParameter, EndpointPage.afterParameter, self.endpoint.detailsParameter ?? ""]
        let bound = self.endpoint.parameters.filter { !skipped.contains($0.name) }.map { ($0.name, arguments[$0.name] ?? .null) }
        return PageCursor.context(endpoint: self.endpoint.title, arguments: bound)
    }

    /// One page, read whole (at most `maxSize` rows) and sent with a strong `ETag` and, unless
    /// it is the last, a `Link` to the next page.
    /// What the request's transaction is set to: the identity's role and claims, and, with
    /// ``tracesIntoDatabase``, the request's trace context; nil when neither.
    func session(for identity: RequestIdentity?, _ request: Request) -> RequestSession? {
        var session = identity?.session
        if self.tracesIntoDatabase, let trace = request.traceContext {
            session = session ?? RequestSession(role: nil, claimsJSON: nil)
            session?.traceContext = trace
        }
        return session
    }

    private func page(_ page: PageRequest, request: Request, details: Set<String>, session: RequestSession?) async throws -> Response {
        guard let pages = self.pages, let key = self.endpoint.page?.key else { preconditionFailure("not a paged endpoint") }
        var arguments = request.arguments
        // One row more than the page: it tells whether there is a next page.
        arguments[KeysetQuery.limitParameter] = .integer(Int64(page.size + 1))
        for (position, value) in (page.after?.values ?? []).enumerated() {
            arguments[KeysetQuery.afterParameter(position)] = value
        }
        let statement = try (page.after == nil ? pages.first : pages.next).statement(for: arguments)
        var stream = self.database.query(statement, arguments)
        stream.rowLimit = page.size
        stream.isLimitedBySQL = true
        stream.keyLabels = key
        self.details.attach(details, to: &stream)
        var rows = RowResult(
            stream: stream, database: self.database, shape: .array, readOnly: true, statementTimeout: self.timeout,
            onReplica: self.endpoint.consistency == .replica)
        rows.validator = .body
        rows.session = session
        let context = self.cursorContext(request.arguments)
        // In hand before the page's own session starts (reading the keys takes a lease).
        let cursorKey = try await self.keys.sealingCursorKey()
        let base = Self.nextPageBase(path: request.path, queryString: request.queryString, size: page.size)
        rows.nextPage = { outcome in
            guard outcome.truncated else { return nil }
            let cursor = PageCursor(values: outcome.lastKey).sealed(with: cursorKey, context: context)
            return base + cursor
        }
        return Response(headers: self.cachingHeaders, body: .produced(rows))
    }

    /// The next page's URL up to the cursor: the request's path and query without `pageSize`
    /// and `after`, then `pageSize=<size>&after=`.
    static func nextPageBase(path: String, queryString: String?, size: Int) -> String {
        let pageKeys: Set<String> = [EndpointPage.sizeParameter, EndpointPage.afterParameter]
        var items = (queryString ?? "").split(separator: "&").filter { item in
            let name = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let decoded = String(name).replacing("+", with: " ").removingPercentEncoding ?? String(name)
            return !pageKeys.contains(decoded)
        }.map(String.init)
        items.append("\(EndpointPage.sizeParameter)=\(size)")
        items.append("\(EndpointPage.afterParameter)=")
        return path + "?" + items.joined(separator: "&")
    }

    private func checkRequired(_ arguments: [String: SQLValue]) throws {
        for parameter in self.endpoint.parameters where parameter.isRequired {
            switch arguments[parameter.name] {
            case nil, .null?, .array([])?:
                throw ArgumentError(.missing, parameter: parameter.name)
            default:
                continue
            }
        }
    }

    /// The endpoint's query with the `details` selected attached, in declaration order.
    private func stream(arguments: [String: SQLValue], details: Set<String>) throws -> RowStream {
        var stream = try self.parsed.map { self.database.query(try $0.statement(for: arguments), arguments) } ?? self.database.query(self.sql, arguments)
        stream.rowLimit = self.endpoint.rowLimit
        if self.endpoint.result == .created { stream.keyLabels = self.endpoint.locationColumns }
        self.details.attach(details, to: &stream)
        return stream
    }

    /// The detail paths the request selects, checked (``DetailTree/selection(_:parameter:)``).
    /// A request for CSV that selects any is a 406 naming the first (CSV holds no arrays).
    private func selectedDetails(_ request: Request) throws -> Set<String> {
        guard let parameter = self.endpoint.detailsParameter else { return [] }
        let selected = try self.details.selection(request.arguments[parameter], parameter: parameter)
        if let first = selected.min(), self.endpoint.result.shape != nil,
            ContentNegotiation.format(accept: request.headers[values: .accept].first) == .csv
        {
            throw DetailsInCSVError(parameter: parameter, detail: first)
        }
        return selected
    }

    private enum Outcome: Sendable {
        case changed(Int)
        /// The encoded body (nil: no row), and the values of the stream's key labels in the
        /// row (the columns `location` names).
        case body([UInt8]?, key: [SQLValue])
    }

    /// A write's conditions (``WriteConditions``) and the current representation's statement.
    private struct ConditionalWrite: Sendable {
        var conditions: WriteConditions
        var current: RowStream
        var shape: ResultShape
    }

    /// Runs a write (or a read that is not a row result) in one transaction and answers what it
    /// did. With an idempotency key, the key is claimed last, with the answer, in the write's
    /// transaction (no round trip of its own before the write): when the key has a record
    /// already, or the write fails, the transaction rolls back and the key is looked up, so a
    /// replay gets the answer kept for it and applies nothing, another request under the key
    /// is 422, and a new key's answer is kept with the write (``IdempotencyKey``). Of requests
    /// under one key at once, one commits; the others wait for it (at the key's unique index,
    /// or a row it wrote) and then answer as replays.
    ///
    /// With a `condition`, the transaction reads one snapshot (``SpoutCore/RequestTransaction/snapshot``):
    /// the current representation is read and compared first, and a failed condition is a 412
    /// with it (``PreconditionFailed``; a replay under a key gets its kept answer instead, as
    /// the write it replays changed the row); the write's answer carries the
    /// `ETag` of the representation it made. A concurrent write that changed the row after the
    /// snapshot (``SpoutCore/DatabaseError/Code/serializationFailure``), or a create under
    /// `If-None-Match` that meets a row inserted meanwhile (a unique violation), runs the
    /// transaction once more, which then sees that row.
    private func runInTransaction(
        _ stream: RowStream, request: Request, session: RequestSession?, identified: Bool, idempotency: IdempotencyKey?,
        condition: ConditionalWrite?
    ) async throws -> Response {
        let format: OutputFormat
        if self.endpoint.result.shape != nil {
            guard let negotiated = ContentNegotiation.format(accept: request.headers[values: .accept].first) else {
                throw ContentNegotiation.notAcceptable
            }
            format = negotiated
        } else {
            format = .json()
        }
        if idempotency != nil { try await self.idempotency.ensure(on: self.database, logger: self.logger) }
        var retried = false
        var keyWasExpired = false
        while true {
            do {
                return try await self.transaction(
                    stream, request: request, format: format, session: session, identified: identified, idempotency: idempotency,
                    condition: condition)
            } catch let failed as PreconditionFailed {
                if let idempotency, case .answered(let kept) = try await self.keptAnswer(for: idempotency) { return kept }
                return failed.response
            } catch let error as DatabaseError where !retried && condition.map({ Self.isResolvedByRereading(error, $0.conditions) }) == true {
                retried = true
            } catch {
                if let idempotency {
                    switch try await self.keptAnswer(for: idempotency) {
                    case .answered(let kept): return kept
                    // The key's record had expired (the lookup deleted it): the key is new.
                    case .expired where !keyWasExpired:
                        keyWasExpired = true
                        continue
                    case .expired, .none: break
                    }
                }
                self.logger.debug(
                    "endpoint transaction rolled back",
                    metadata: ["request.id": "\(request.id)", "endpoint": "\(self.endpoint.title)", "error": "\(error)"])
                if let constraints = self.constraints, constraints.mayTrace(error) {
                    throw await constraints.trace(error, arguments: request.arguments, on: self.database)
                }
                throw UnrepresentableText.naming(error, arguments: request.arguments)
            }
        }
    }

    /// What a keyed write that failed (it rolled back) finds under its key.
    private enum KeptAnswer {
        /// The same request committed under the key first (a replay, or one that ran at once
        /// and won): its answer.
        case answered(Response)
        /// Only a record older than the retention, now deleted: the write may run again.
        case expired
        /// Nothing: the write's own failure stands.
        case none
    }

    /// After a keyed write failed: what is kept under its key (``KeptAnswer``), or
    /// ``IdempotencyKeyReused`` when another request committed under it.
    private func keptAnswer(for idempotency: IdempotencyKey) async throws -> KeptAnswer {
        let retention = self.idempotency.retentionSeconds
        typealias Found = (expired: Bool, record: (requestHash: String, answer: StoredAnswer?)?)
        let work = DatabaseWork(readOnly: false, transaction: .always(readOnly: false))
        let found: Found = try await self.database.withSession(work) { session in
            try await session.runLast { connection -> Found in
                guard let store = connection as? any IdempotencyStore else { return (false, nil) }
                let expired = try store.deleteExpiredIdempotencyKey(scope: idempotency.scope, key: idempotency.key, retentionSeconds: retention)
                return (expired, try store.idempotencyRecord(scope: idempotency.scope, key: idempotency.key))
            }
        }
        guard let kept = found.record, let answer = kept.answer else { return found.expired ? .expired : .none }
        guard kept.requestHash == idempotency.requestHash else { throw IdempotencyKeyReused() }
        return .answered(IdempotencyKey.replay(answer))
    }

    /// Whether a conditional write that failed with `error` should run once more: another
    /// transaction changed the row after its snapshot, or inserted the row a create under
    /// `If-None-Match` meant to make. Run again, it compares with that row.
    private static func isResolvedByRereading(_ error: DatabaseError, _ conditions: WriteConditions) -> Bool {
        error.code == .serializationFailure || (error.code == .uniqueViolation && conditions.ifNoneMatch != nil)
    }

    /// One attempt of ``runInTransaction(_:request:session:identified:idempotency:condition:)``.
    private func transaction(
        _ stream: RowStream, request: Request, format: OutputFormat, session: RequestSession?, identified: Bool,
        idempotency: IdempotencyKey?, condition: ConditionalWrite?
    ) async throws -> Response {
        let result = self.endpoint.result
        let dateFormat = self.database.configuration.dateFormat
        let work = DatabaseWork(
            readOnly: self.endpoint.readOnly, statementTimeout: self.timeout,
            transaction: condition == nil ? .always(readOnly: self.endpoint.readOnly) : .snapshot,
            session: session, cancelsWithTask: self.endpoint.readOnly)
        let spans = DatabaseSpans(request.span, database: self.database)
        return try await self.database.withSession(work) { session in
            let run = {
                try await session.runLast { connection -> Response in
                    if let condition {
                        let current = try CurrentRepresentation.read(
                            condition.current, shape: condition.shape, as: format, dateFormat: dateFormat, on: connection)
                        guard condition.conditions.hold(for: current?.tag) else {
                            throw PreconditionFailed(response: self.preconditionFailed(current, condition.conditions, format: format, identified: identified))
                        }
                    }
                    let outcome = try Self.run(stream, result: result, format: format, dateFormat: dateFormat, on: connection)
                    var response = try self.response(to: outcome, of: stream, request: request, format: format, identified: identified)
                    if let condition,
                        let made = try CurrentRepresentation.read(
                            condition.current, shape: condition.shape, as: format, dateFormat: dateFormat, on: connection)
                    {
                        response.headers.replaceOrAdd(.eTag, made.tag.description)
                    }
                    if let idempotency, let store = connection as? any IdempotencyStore {
                        try store.keepIdempotentAnswer(
                            scope: idempotency.scope, key: idempotency.key, requestHash: idempotency.requestHash,
                            answer: IdempotencyKey.stored(response))
                    }
                    return response
                }
            }
            return try await DatabaseSpans.measure(spans, "transaction", run)
        }
    }

    /// The 412 of a failed condition: the current row as the GET answers it, with its `ETag`,
    /// or, when there is none, an error naming the field.
    private func preconditionFailed(
        _ current: (body: [UInt8], tag: EntityTag)?, _ conditions: WriteConditions, format: OutputFormat, identified: Bool
    ) -> Response {
        var response: Response
        if let current {
            response = Response(status: .preconditionFailed, body: .bytes(current.body, contentType: format.contentType))
            response.headers[.eTag] = current.tag.description
        } else {
            let message = "precondition failed (\(conditions.fieldName)): the resource has no current row"
            response = Response(
                status: .preconditionFailed, body: .bytes(ErrorResponse(status: .preconditionFailed, message: message).body, contentType: "application/json"))
        }
        if identified {
            for field in self.cachingHeaders { response.headers.replaceOrAdd(field.name, field.value) }
        }
        return response
    }

    /// What a write answers for `outcome`, inside its transaction (a write that changed no row
    /// is a 404 that rolls it back); `identified`: the answer depends on who asked, as a read's
    /// does, and says so to caches.
    private func response(
        to outcome: Outcome, of stream: RowStream, request: Request, format: OutputFormat, identified: Bool
    ) throws -> Response {
        var response: Response
        switch (self.endpoint.result, outcome) {
        case (.none, .changed(let count)):
            guard count > 0 else { throw HTTPError(status: .notFound, message: "not found") }
            response = .noContent()
        case (.created, .body(let bytes, let key)):
            // A parameter fills its placeholder; a column of the returned row (a generated key)
            // fills those no parameter names.
            var values = request.arguments
            for (label, value) in zip(stream.keyLabels, key) { values[label] = value }
            let location = LocationTemplate.fill(self.endpoint.location ?? request.path, with: values)
            if let bytes {
                response = .created(location: location, body: .bytes(bytes, contentType: format.contentType))
            } else {
                response = .created(location: location)
            }
        case (_, .body(let bytes, _)):
            response = .bytes(bytes ?? [], contentType: format.contentType)
        case (_, .changed):
            response = .noContent()
        }
        if identified {
            for field in self.cachingHeaders { response.headers.replaceOrAdd(field.name, field.value) }
        }
        return response
    }

    private static func run(
        _ stream: RowStream, result: EndpointResult, format: OutputFormat, dateFormat: DateFormat, on connection: any DatabaseConnection
    ) throws -> Outcome {
        if let shape = result.shape {
            let sink = CollectingSink()
            do {
                let outcome = try stream.run(as: format, shape: shape, to: sink, on: connection, dateFormat: dateFormat)
                return .body(sink.bytes, key: outcome.lastKey)
            } catch RowStreamError.noRow where result == .created {
                return .body(nil, key: [])
            }
        }
        let parsed = try stream.statement(for: connection.dialect)
        return .changed(try connection.execute(parsed, try parsed.bind(stream.arguments)))
    }
}

extension LocationTemplate {
    /// `template` with each `{name}` replaced by the argument's text, percent-encoded for a
    /// path segment (an absent or null argument becomes empty).
    static func fill(_ template: String, with arguments: [String: SQLValue]) -> String {
        var output = ""
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            output += rest[..<open]
            let name = String(rest[rest.index(after: open)..<close])
            output += self.percentEncoded((arguments[name] ?? .null).requestText(null: "", bytes: { _ in "" }))
            rest = rest[rest.index(after: close)...]
        }
        return output + rest
    }

    /// Percent-encodes everything but RFC 3986 unreserved characters (Foundation's encoder,
    /// uppercase hex digits).
    static func percentEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: Self.unreserved) ?? ""
    }

    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
