import SpoutCore
import SpoutHTTP

/// What a write's conditions (`If-Match`, `If-None-Match`, ``WriteConditions``) are compared
/// with: the row the GET endpoint of the written resource answers, read in the write's own
/// transaction.
///
/// Contract:
/// - The resource is the write's path for an update or a delete (`POST /pets/{name}` ↔
///   `GET /pets/{name}`), and its `location` for a create (`POST /pets` with `location:
///   /pets/{name}` ↔ `GET /pets/{name}`); the GET answers one row (`object` or `scalar`).
///   ``EndpointSet/representation(of:)`` pairs them at start.
/// - The body is what that GET answers without `details`, in the write's format, and its tag is
///   the strong `ETag` the GET sends for those bytes (``SpoutHTTP/EntityTag/strong(body:)``):
///   a tag a client was sent by the GET names it.
/// - It is read under the write's session (role and claims): what the caller's GET would see.
struct CurrentRepresentation: Sendable {
    /// The GET endpoint (`GET /pets/{name}`).
    let endpoint: Endpoint
    /// For each path key of the GET, in order, the write's argument that fills it.
    let sources: [String]
    let shape: ResultShape
    private let parsed: FilteredSQL?
    private let sql: String
    /// The claim parameters the GET's SQL uses (`claims.sub`), bound from the write's identity.
    let claimNames: Set<String>

    init(endpoint: Endpoint, sources: [String], dialect: SQLDialect) {
        self.endpoint = endpoint
        self.sources = sources
        self.shape = endpoint.result.shape ?? .object
        self.sql = endpoint.sql.text(for: dialect)
        self.parsed = try? FilteredSQL(self.sql, dialect: dialect)
        self.claimNames = Set(self.parsed?.written.parameterNames ?? []).filter { RequestIdentity.claimPath(of: $0) != nil }
    }

    /// The GET's statement for a write with `arguments`: its path keys from the write's
    /// arguments, its other parameters at their defaults, its claims as the write's.
    func stream(on database: Database, writeArguments arguments: [String: SQLValue]) throws -> RowStream {
        var bound: [String: SQLValue] = [:]
        for parameter in self.endpoint.parameters {
            if let value = parameter.defaultValue { bound[parameter.name] = value }
        }
        for (key, source) in zip(self.endpoint.pathKeys, self.sources) { bound[key] = arguments[source] ?? .null }
        for name in self.claimNames { bound[name] = arguments[name] ?? .null }
        guard let parsed = self.parsed else { return try database.query(self.sql, bound) }
        return database.query(try parsed.statement(for: bound), bound)
    }

    /// The current body and its tag, read with `stream` on `connection` (blocking, in the
    /// write's transaction); nil when there is no row.
    static func read(
        _ stream: RowStream, shape: ResultShape, as format: OutputFormat, dateFormat: DateFormat, on connection: any DatabaseConnection
    ) throws -> (body: [UInt8], tag: EntityTag)? {
        let sink = CollectingSink()
        do {
            _ = try stream.run(as: format, shape: shape, to: sink, on: connection, dateFormat: dateFormat)
        } catch RowStreamError.noRow {
            return nil
        }
        return (sink.bytes, EntityTag.strong(body: sink.bytes))
    }
}

extension EndpointSet {
    /// The GET endpoint whose answer is `endpoint`'s current representation
    /// (``CurrentRepresentation``), and the write's argument for each of its path keys; nil
    /// for a read, for a create whose `location` names a column of the new row (a generated
    /// key, which no earlier row can have), when no GET of one row (`object`, `scalar`) has
    /// the resource's path, and when that GET needs credentials the write does not check (an
    /// API key or token of another file's `auth`): a 412 must not show a row to a caller the
    /// GET itself would refuse.
    func representation(of endpoint: Endpoint) -> (endpoint: Endpoint, sources: [String])? {
        guard endpoint.method != .get, !endpoint.readOnly else { return nil }
        let template: String
        if endpoint.result == .created {
            guard let location = endpoint.location, endpoint.locationColumns.isEmpty else { return nil }
            template = location
        } else {
            template = endpoint.path
        }
        let shape = EndpointPath.shape(of: template)
        guard
            let get = self.endpoints.first(where: { $0.method == .get && EndpointPath.shape(of: $0.path) == shape }),
            get.result == .object || get.result == .scalar
        else { return nil }
        let open = get.apiKeys == nil && get.tokenPolicy == nil
        let sameAuth =
            get.tag == endpoint.tag && (get.apiKeys == nil || endpoint.apiKeys != nil)
            && (get.tokenPolicy == nil || get.tokenPolicy == endpoint.tokenPolicy)
        guard open || sameAuth else { return nil }
        return (get, EndpointPath.keys(of: template))
    }
}
