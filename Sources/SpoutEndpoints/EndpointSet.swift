import Foundation
import Logging
import SpoutCore
import SpoutHTTP

/// Every endpoint of a service, loaded and checked from the endpoint files.
///
/// ```swift
/// let environment = ProcessInfo.processInfo.environment
/// let configuration = try SpoutConfiguration.load(environment: environment)
/// let endpoints = try EndpointSet.load(configuration: configuration, environment: environment)
/// let database = try Drivers.open(configuration.database.url, configuration: configuration.databaseConfiguration)
/// var router = Router()
/// for route in endpoints.makeRoutes(database: database, logger: logger) { router.add(route) }
/// ```
///
/// Loading checks everything that can be known without a database (see `docs/endpoints.md`)
/// and throws the first problem as a ``ConfigurationError`` with its file and line;
/// ``statementProblems(on:)`` then checks every statement against the database. A set that
/// passed both serves every endpoint without further configuration errors.
public struct EndpointSet: Sendable {
    /// An endpoint file and its description (an OpenAPI tag).
    public struct File: Sendable, Hashable {
        public var path: String
        /// The file name without extension; the ``Endpoint/tag`` of its endpoints.
        public var tag: String
        public var summary: String?
        /// The file's `auth` section: which methods need an API key, from which variable.
        public var auth: EndpointAuth?
    }

    /// Every endpoint, in file order and, within a file, in declaration order.
    public let endpoints: [Endpoint]
    public let files: [File]
    /// The statement timeout of endpoints that declare none.
    public let defaultStatementTimeout: Duration?
    /// The title of the API documentation and the OpenAPI document.
    public var title: String = "Spout"
    /// The version in the OpenAPI document's `info`.
    public var version: String = "1.0.0"
    /// The operator's secret for the cursors of paged endpoints (`cursorSecret`); empty: the
    /// keys of the database served (``InstanceKeys``).
    public var cursorSecret = ""
    /// How tokens are verified and whom verified requests run as (the configuration's
    /// `identity`); ``tokenVerifier`` is nil when no key is configured (then every token is
    /// refused: endpoints that need one answer 401).
    public var identity = SpoutConfiguration.Identity()
    public var tokenVerifier: TokenVerifier? = nil
    /// Whether the database is ready for the syncable endpoints' reads, shared by every copy.
    public let syncState = SyncState()
    /// Where writes' answers by idempotency key are kept, and for how long.
    public var idempotencyState = IdempotencyState()
    /// How live notices run, and where they are counted (nil: not counted).
    public var noticeSettings = LiveNoticeSettings()
    public var noticeMetrics: NoticeMetrics? = nil
    /// Whether each request's transaction shows its trace context to the database
    /// (`database.traceContext`, ``SpoutCore/RequestSession/traceContext``).
    public var tracesIntoDatabase = false
    /// Where a bulk write keeps the keys it made until its transaction commits
    /// (``SpoutHTTP/SpooledBody``): the spool's directory; nil: `TMPDIR`, else `/tmp`.
    public var temporaryDirectory: String? = nil
    /// The most bytes of a bulk body kept to run its records once it is whole, when it came
    /// too slowly to run them as it arrived: the spool's bytes per stream, or 0 (none kept,
    /// no file made) when the spool is off.
    public var keptBulkBodyLimit = SpoolConfiguration().maximumBytesPerStream
    /// How many stalled bulk bodies may be kept at once, over every bulk endpoint (each holds a
    /// reading thread and a file while its client sends the rest); a write that stalls when
    /// as many are is a 503.
    public var maximumKeptBulkBodies = 64
    /// The columns of each endpoint's result and of its details', as the database described
    /// them when the start checked the statements (``statementCheck(on:)``): by endpoint
    /// title (`GET /pets`), then by detail path (`""` for the endpoint itself, `pets.events`).
    /// The OpenAPI document types its response properties from them; empty when unchecked.
    public var resultColumns: [String: [String: [Column]]] = [:]

    /// The path of the generated OpenAPI document.
    public static let openAPIPath = "/openapi.json"

    public init(endpoints: [Endpoint], files: [File] = [], defaultStatementTimeout: Duration? = nil) {
        self.endpoints = endpoints
        self.files = files
        self.defaultStatementTimeout = defaultStatementTimeout
    }

    /// Loads the endpoint files of `configuration` (``SpoutConfiguration/endpointFiles()``)
    /// with SQL from its ``SpoutConfiguration/resolvedSQLDirectory``; `auth` sections read
    /// their keys, and `identity` its secret, from `environment` and never from the process's
    /// own (the executable passes the process's environment, a test the variables it sets).
    public static func load(
        configuration: SpoutConfiguration, environment: [String: String]
    ) throws(ConfigurationError) -> EndpointSet {
        var endpoints = try self.load(
            files: try configuration.endpointFiles(), sqlDirectory: configuration.resolvedSQLDirectory,
            defaultStatementTimeout: configuration.defaultStatementTimeout, maxDetailDepth: configuration.maxDetailDepth,
            environment: environment)
        endpoints.cursorSecret = configuration.cursorSecret
        endpoints.identity = configuration.identity
        endpoints.tracesIntoDatabase = configuration.database.traceContext
        endpoints.idempotencyState = IdempotencyState(retention: .seconds(configuration.database.idempotencyRetentionHours * 3_600))
        endpoints.noticeSettings = configuration.liveNoticeSettings
        endpoints.temporaryDirectory = configuration.serverConfiguration.spool.directory
        let spool = configuration.serverConfiguration.spool
        endpoints.keptBulkBodyLimit = spool.isEnabled ? spool.maximumBytesPerStream : 0
        endpoints.tokenVerifier = try Self.tokenVerifier(configuration: configuration, environment: environment)
        return endpoints
    }

    /// Loads `files`; `sqlFile` paths are relative to `sqlDirectory`, `auth` sections read
    /// their keys from `environment` (never from the process's own), details nest at most `maxDetailDepth` levels.
    /// - Throws: ``ConfigurationError`` for the first problem: unknown key or type, invalid
    ///   value, missing SQL file, undeclared SQL parameter, invalid SQL, duplicate route, an
    ///   `auth` variable that is unset or empty.
    public static func load(
        files: [String], sqlDirectory: String, defaultStatementTimeout: Duration? = nil,
        maxDetailDepth: Int = SpoutConfiguration.defaultMaxDetailDepth,
        environment: [String: String]
    ) throws(ConfigurationError) -> EndpointSet {
        let parser = EndpointFileParser(sqlDirectory: sqlDirectory, environment: environment, maxDetailDepth: maxDetailDepth)
        var endpoints: [Endpoint] = []
        var loadedFiles: [File] = []
        var routes: [String: Endpoint] = [:]
        for file in files {
            let parsed = try parser.parse(file: file)
            for endpoint in parsed.endpoints {
                let key = "\(endpoint.method) \(EndpointPath.shape(of: endpoint.path))"
                if endpoint.method == .get && endpoint.path == self.openAPIPath {
                    throw ConfigurationError(
                        file: endpoint.file, line: endpoint.line,
                        message: "GET \(self.openAPIPath) is the generated OpenAPI document; choose another path")
                }
                func claim(_ key: String, _ title: String) throws(ConfigurationError) {
                    if let earlier = routes[key] {
                        let place = earlier.file + (earlier.line.map { ":\($0)" } ?? "")
                        throw ConfigurationError(
                            file: endpoint.file, line: endpoint.line, message: "duplicate route \(title): \(earlier.title) is already declared at \(place)")
                    }
                    routes[key] = endpoint
                }
                try claim(key, endpoint.title)
                if let bulkPath = endpoint.bulkPath {
                    try claim("POST \(EndpointPath.shape(of: bulkPath))", "POST \(bulkPath) (bulk of \(endpoint.title))")
                }
                endpoints.append(endpoint)
            }
            let tag = parsed.endpoints.first?.tag ?? file
            loadedFiles.append(File(path: file, tag: tag, summary: parsed.description, auth: parsed.auth))
        }
        return EndpointSet(endpoints: endpoints, files: loadedFiles, defaultStatementTimeout: defaultStatementTimeout)
    }

    /// The routes serving every endpoint on `database`, plus `GET /openapi.json`.
    ///
    /// `GET <path>?api` answers the HTML documentation of the endpoints under `<path>`: every
    /// `GET` endpoint does, and so does a documentation-only `GET` route registered for each
    /// prefix of an endpoint path (and each path) that has no `GET` endpoint of its own (`/`, `/departments/{departmentNumber}`);
    /// without `?api` those answer 404. SQL is chosen for `database.dialect` (its override
    /// when there is one).
    ///
    /// Page cursors are sealed with `keys`; by default, keys made here for `database` and
    /// ``cursorSecret`` (pass the same ``InstanceKeys`` to share them with `/ready` and the start).
    public func makeRoutes(database: Database, logger: Logger, keys: InstanceKeys? = nil) -> [Route] {
        let keys = keys ?? InstanceKeys(cursorSecret: self.cursorSecret, database: database, logger: logger)
        let documentation = APIDocumentation(endpoints: self)
        // One hub of live notices per database served: one poller of its change log.
        let syncable = self.endpoints.filter { $0.sync != nil }.map(\.title)
        let notices: (hub: LiveNotices, syncable: [String])? =
            syncable.isEmpty
            ? nil : (LiveNotices(database: database, settings: self.noticeSettings, metrics: self.noticeMetrics, logger: logger), syncable)
        var routes: [Route] = []
        let keptBodies = BulkBodySlots(maximum: self.maximumKeptBulkBodies)
        for endpoint in self.endpoints {
            let handler = EndpointHandler(
                endpoint: endpoint, database: database, timeout: endpoint.timeout ?? self.defaultStatementTimeout,
                documentation: documentation, logger: logger, keys: keys, tracesIntoDatabase: self.tracesIntoDatabase,
                identity: (self.identity, self.tokenVerifier), syncState: self.syncState,
                idempotency: self.idempotencyState, representation: self.representation(of: endpoint), notices: notices)
            routes.append(
                Route(
                    endpoint.method, endpoint.path, parameters: handler.routeParameters, summary: endpoint.summary,
                    apiKeys: endpoint.apiKeys, body: endpoint.body.map {
                        RouteBody(parameter: $0, mediaType: endpoint.mediaType, mediaTypeParameter: endpoint.mediaTypeParameter)
                    },
                    maximumBodySize: endpoint.maxBodyBytes, errorFields: handler.errorFields,
                    handler: handler.handle))
            if let bulkPath = endpoint.bulkPath {
                // Only the path's keys and the query come with the head; each record gives the rest.
                let shared = handler.routeParameters.map { parameter in
                    var relaxed = parameter
                    if !endpoint.pathKeys.contains(parameter.name) { relaxed.isRequired = false }
                    return relaxed
                }
                routes.append(
                    Route(
                        .post, bulkPath, parameters: shared, summary: endpoint.summary.map { "Many records at once: \($0)" },
                        apiKeys: endpoint.apiKeys, streamsBody: true, errorFields: handler.errorFields,
                        handler: BulkWrite(
                            handler: handler, temporaryDirectory: self.temporaryDirectory, keptBodyLimit: self.keptBulkBodyLimit,
                            keptBodies: keptBodies
                        ).handle))
            }
        }
        let openAPI = OpenAPIDocument(endpoints: self, dateFormat: database.configuration.dateFormat).bytes
        routes.append(
            Route(.get, Self.openAPIPath, summary: "The OpenAPI 3.1 document of this service") { _ in
                .bytes(openAPI, contentType: "application/json")
            })
        for prefix in self.documentationPrefixes {
            routes.append(
                Route(.get, prefix, summary: "Documentation of the endpoints under \(prefix) (?api)") { request in
                    guard request.hasQueryKey("api") else { throw HTTPError(status: .notFound, message: "not found") }
                    return documentation.response(for: request.path)
                })
        }
        for file in self.files {
            if let auth = file.auth { Self.logRequirement(of: auth, for: ["endpoints.group": "\(file.tag)"], logger: logger) }
        }
        for endpoint in self.endpoints {
            if let auth = endpoint.ownAuth { Self.logRequirement(of: auth, for: ["endpoint": "\(endpoint.title)"], logger: logger) }
        }
        logger.debug("endpoints registered", metadata: ["endpoints.count": "\(self.endpoints.count)"])
        return routes
    }

    /// Logs at start what `auth` asks of the endpoints `scope` names (a file's group, or one
    /// endpoint with its own `auth`): a token and its policy, or API keys and their variable.
    private static func logRequirement(of auth: EndpointAuth, for scope: Logger.Metadata, logger: Logger) {
        var metadata = scope
        metadata["auth.methods"] = "\(auth.methods.map(\.rawValue).joined(separator: ","))"
        if let token = auth.token {
            metadata["auth.anonymous"] = "\(token.anonymous)"
            metadata["auth.roles"] = "\(token.roles.joined(separator: ","))"
            logger.info("tokens required", metadata: metadata)
        } else {
            metadata["auth.variable"] = "\(auth.environmentVariable)"
            metadata["auth.keys"] = "\(auth.keyCount)"
            logger.info("API keys required", metadata: metadata)
        }
    }

    /// The prefixes of endpoint paths (including `/` and the paths themselves) with no GET
    /// endpoint, in order.
    var documentationPrefixes: [String] {
        var taken = Set(self.endpoints.filter { $0.method == .get }.map { EndpointPath.shape(of: $0.path) })
        taken.insert(EndpointPath.shape(of: Self.openAPIPath))
        var prefixes: [String] = []
        for endpoint in self.endpoints {
            let segments = EndpointPath.segments(of: endpoint.path)
            for count in 0...segments.count {
                let prefix = "/" + segments.prefix(count).joined(separator: "/")
                if taken.insert(EndpointPath.shape(of: prefix)).inserted { prefixes.append(prefix) }
            }
        }
        return prefixes
    }

    /// A router holding ``makeRoutes(database:logger:keys:)`` and `GET /ready` for `database`
    /// (``SpoutHTTP/Router/addReadiness(of:keys:)``), both with `keys` (by default, made here).
    public func makeRouter(database: Database, logger: Logger, keys: InstanceKeys? = nil) -> Router {
        let keys = keys ?? InstanceKeys(cursorSecret: self.cursorSecret, database: database, logger: logger)
        var router = Router()
        for route in self.makeRoutes(database: database, logger: logger, keys: keys) { router.add(route) }
        router.addReadiness(of: [database], keys: keys)
        return router
    }

    /// The OpenAPI 3.1 document (JSON) describing every endpoint, dates written as
    /// `dateFormat` writes them.
    public func openAPIDocument(dateFormat: DateFormat = .epochMilliseconds) -> [UInt8] {
        OpenAPIDocument(endpoints: self, dateFormat: dateFormat).bytes
    }
}
