import Foundation
import SpoutCore
import SpoutHTTP

/// The settings of a Spout service: `config/spout.yaml`, then environment variables, then the
/// executable's explicit overrides (each layer wins over the one before).
///
/// Every key has a default, so an empty or missing file is a working configuration. Relative
/// paths in ``endpoints`` and ``sqlDirectory`` are resolved against the directory of the
/// configuration file (``baseDirectory``); the database URL is used as written (a relative
/// SQLite path is relative to the working directory). The environment variables are listed in
/// ``environmentVariables`` and in `docs/configuration.md`.
public struct SpoutConfiguration: Sendable, Hashable {
    /// Limits of the HTTP server.
    public struct Limits: Sendable, Hashable {
        /// Largest request head (request line and header fields), in bytes.
        public var maxHeaderBytes = 16 * 1024
        /// Largest request body, in bytes.
        public var maxBodyBytes = 1024 * 1024
        /// Most bytes of request bodies held in memory at once, all clients together; 0 for no
        /// limit (``SpoutHTTP/ServerConfiguration/maximumBufferedBodyBytes``).
        public var maxBufferedBodyBytes = 256 * 1024 * 1024
        /// A connection with no request in progress is closed after this many seconds.
        public var idleTimeoutSeconds = 60
        /// Connections beyond this many are refused with 503; 0 sizes it from the open-file limit.
        public var maxConnections = 0
        /// Connections one client address may hold open; 0 for no cap.
        public var maxConnectionsPerAddress = 32
        /// Seconds a request head may take to arrive, from its first byte.
        public var headTimeoutSeconds = 10
        /// Seconds a request body may take to arrive, from the end of its head.
        public var bodyTimeoutSeconds = 30
        /// Peer addresses of reverse proxies, exempt from the per-address cap.
        public var trustedProxies: [String] = []
        /// How long a shutdown lets in-flight responses finish, in seconds.
        public var drainTimeoutSeconds = 10
        /// `SO_SNDBUF` of client connections in bytes; 0 keeps the kernel's default.
        public var socketSendBufferBytes = 0
        /// Streamed responses one client address may have at once (429 beyond); 0 for no cap.
        public var maxStreamsPerAddress = 16
        /// Event streams of live notices open at once, in all (503 beyond) and per client
        /// address (429 beyond); 0 for no cap.
        public var maxSubscribers = 10_000
        public var maxSubscribersPerAddress = 64

        public init() {}
    }

    /// Where streams whose client reads slower than the database answers spool (see
    /// `SpoolConfiguration`).
    public struct Spool: Sendable, Hashable {
        public var enabled = true
        /// Empty: `TMPDIR`, else `/tmp`.
        public var directory = ""
        public var memoryBytesPerStream = 512 * 1024
        public var maxBytesPerStream = 1 << 30
        public var maxBytes = 4 << 30

        public init() {}
    }

    /// Which browser origins may call the service (CORS); see `CORSPolicy` for the headers sent.
    public struct CORS: Sendable, Hashable {
        /// Origins (`https://app.example.com`) or `*`; empty (the default) turns CORS off.
        public var allowedOrigins: [String] = []
        /// The request headers a preflight allows.
        public var allowedHeaders = CORSPolicy.defaultAllowedHeaders
        /// How long browsers may cache a preflight's answer, in seconds.
        public var maxAgeSeconds = 600

        public init() {}
    }

    /// Where and how the HTTP server listens.
    /// `GET /metrics` in the Prometheus text format.
    public struct Metrics: Sendable, Hashable {
        public var enabled = true
        /// 0 serves the metrics on the main port; another port serves them there only, on `host`.
        public var port = 0
        /// The address of the metrics port (with `port` set).
        public var host = "127.0.0.1"

        public init() {}
    }

    public struct Server: Sendable, Hashable {
        public var host = "127.0.0.1"
        /// 0 picks a free port.
        public var port = 8080
        public var limits = Limits()
        public var cors = CORS()
        public var metrics = Metrics()
        public var spool = Spool()
        /// `Server-Timing` on row responses sent whole.
        public var timingHeader = false
        /// How long an event stream of live notices goes without a byte before a heartbeat.
        public var heartbeatSeconds = 15

        public init() {}
    }

    /// Whether and how much sample data `spout serve` generates into an empty SQLite database.
    public struct Seed: Sendable, Hashable {
        public var enabled = true
        /// Employees to generate.
        public var employees = 20_000

        public init() {}
    }

    /// The database and its connection pool.
    public struct DatabaseSettings: Sendable, Hashable {
        /// `postgresql://user@host:port/name` or `sqlite:path` (see `Drivers`).
        public var url = "sqlite:data/spout.sqlite"
        /// PostgreSQL read replicas of `url`: read-only endpoints are spread across them (each
        /// with a pool of `poolSize`), falling back to the primary (see `ReadReplicas`).
        public var replicaUrls: [String] = []
        /// A replica whose replay is further behind than this is skipped; 0 does not check.
        public var replicaMaxLagMs = 0
        /// The most connections open at once.
        public var poolSize = 8
        /// How long a request waits for a free connection before a 503, in milliseconds.
        public var acquireTimeoutMs = 5_000
        /// The statement timeout of endpoints that set none, in milliseconds; 0 for none.
        public var statementTimeoutMs = 30_000
        /// PostgreSQL: how long past the statement timeout Spout waits for the server's answer
        /// before it shuts the connection (``SpoutCore/DatabaseConfiguration/answerGraceMilliseconds``);
        /// 0 for no limit.
        public var answerGraceMs = 5_000
        /// Rows per batch when a result is streamed (a PostgreSQL `FETCH`; on SQLite the rows a
        /// statement timeout is renewed after).
        public var fetchSize = DatabaseConfiguration.defaultFetchSize
        /// False behind a transaction pooler (PgBouncer in transaction mode): no named prepared
        /// statements, no session state (see ``DatabaseConfiguration/preparedStatements``).
        public var preparedStatements = true
        /// Connections of each pool that streams may not take (kept for requests answered whole).
        public var streamReserve = 2
        /// How long a stream waits for a connection before a 503, in milliseconds.
        public var streamAcquireTimeoutMs = 30_000
        /// PostgreSQL connections, besides the pool's, that carry many requests' single-row
        /// reads at once (``SpoutCore/DatabaseConfiguration/sharedReaders``); 0: none.
        public var sharedReaders = 2
        /// How often live notices read the change log's position while anyone subscribes, in
        /// milliseconds.
        public var changePollMs = 250
        /// How long the change log keeps a change for sync reads, in hours: a sync cursor older
        /// than that is answered 410 and its client syncs again from the beginning.
        public var changeRetentionHours = 168
        /// How long a write's answer is replayed for its `Idempotency-Key`, in hours.
        public var idempotencyRetentionHours = 24
        /// The PostgreSQL connections' `application_name`; empty for `spout@HOST/PID` (see
        /// ``DatabaseConfiguration/applicationName``).
        public var applicationName = ""
        /// PostgreSQL: each request's transaction sets `application_name` to its trace
        /// context first (``SpoutCore/RequestSession/traceContext``).
        public var traceContext = false
        public var seed = Seed()

        public init() {}
    }

    /// How bearer tokens (JWT) are verified and whom a verified request runs as (issue #30;
    /// see ``TokenVerifier`` and `docs/endpoints.md`).
    public struct Identity: Sendable, Hashable {
        /// The environment variable holding the HS256/384/512 secret (at least 32 bytes); the
        /// secret itself is never in the file.
        public var secretFromEnvironment = "SPOUT_JWT_SECRET"
        /// A JWKS file (relative to the configuration file) with the public keys of RS256,
        /// PS256, ES256, ES384 and EdDSA tokens; empty: none.
        public var jwksFile = ""
        /// A JWKS URL (`https://…/.well-known/jwks.json`) whose keys join the file's, fetched
        /// at start and again as ``JWKSRefreshPolicy`` says; empty: none.
        public var jwksUrl = ""
        /// Seconds the keys of ``jwksUrl`` are used before they are fetched again.
        public var jwksRefreshSeconds = 300
        /// The least seconds between two fetches of ``jwksUrl`` (a token with an unknown `kid`
        /// fetches at once, but at most this often; so does a retry after a failed fetch).
        public var jwksCooldownSeconds = 10
        /// API keys that carry an identity (see ``IdentityKeys``).
        public var apiKeys: [APIKey] = []
        /// The algorithms a token may use; `none` is never accepted.
        public var algorithms = TokenVerifier.supportedAlgorithms
        /// Seconds of clock skew allowed around `exp` and `nbf`.
        public var leewaySeconds = 30
        /// Seconds a token without `exp` is accepted after its `iat` (one with neither is
        /// refused); 0: such tokens never expire. A token's own `exp` always wins.
        public var maxLifetimeSeconds = 86_400
        /// When set, a token's `iss` must equal it.
        public var issuer = ""
        /// When set, a token's `aud` must be it or contain it.
        public var audience = ""
        /// The claim naming the token's role.
        public var roleClaim = "role"
        /// PostgreSQL roles a request may switch to (`SET LOCAL ROLE`); empty: none (requests
        /// run as the connection's own role).
        public var roles: [String] = []
        /// The role of a token that names none; empty: the connection's own role.
        public var defaultRole = ""
        /// The role of a request without a token on an endpoint that allows anonymous callers;
        /// empty: the connection's own role.
        public var anonymousRole = ""

        public init() {}

        /// An API key that stands for a subject (and role): `identity.apiKeys`.
        public struct APIKey: Sendable, Hashable {
            /// The `sub` claim of requests that present the key.
            public var subject: String
            /// The role claim; empty: none (the default role applies, as for a token).
            public var role: String
            /// The environment variable holding the key (the key is never in the file).
            public var keyFromEnvironment: String

            public init(subject: String, role: String = "", keyFromEnvironment: String) {
                self.subject = subject
                self.role = role
                self.keyFromEnvironment = keyFromEnvironment
            }
        }
    }

    /// `tracing`: spans of requests and their database work, exported over OTLP/HTTP (#34;
    /// docs/configuration.md, Tracing). The standard `OTEL_*` variables override these.
    public struct Tracing: Sendable, Hashable {
        /// Off by default. `OTEL_TRACES_EXPORTER=otlp` turns it on too; `OTEL_SDK_DISABLED=true`
        /// or `OTEL_TRACES_EXPORTER=none` off.
        public var enabled = false
        /// The OTLP/HTTP collector's base URL (`/v1/traces` is added); empty: the exporter's
        /// default, `http://localhost:4318` (`OTEL_EXPORTER_OTLP_ENDPOINT`).
        public var endpoint = ""
        /// `http/protobuf` (default) or `http/json` (`OTEL_EXPORTER_OTLP_PROTOCOL`).
        public var `protocol` = "http/protobuf"
        /// The `service.name` of the spans (`OTEL_SERVICE_NAME`).
        public var serviceName = "spout"
        /// The share of new traces sampled, in percent; a request that continues a trace follows
        /// its caller's decision (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`).
        public var samplePercent = 100

        public init() {}
    }

    /// Values the executable passes from its command line; they win over file and environment.
    public struct Overrides: Sendable, Hashable {
        public var host: String?
        public var port: Int?
        public var databaseURL: String?

        public init(host: String? = nil, port: Int? = nil, databaseURL: String? = nil) {
            self.host = host
            self.port = port
            self.databaseURL = databaseURL
        }
    }

    public var server = Server()
    public var database = DatabaseSettings()
    public var identity = Identity()
    public var tracing = Tracing()
    /// How dates and timestamps are written: epoch milliseconds (default) or ISO-8601.
    public var dateFormat: DateFormat = .epochMilliseconds
    /// Endpoint files or patterns (`*` and `?` in the file name), relative to ``baseDirectory``.
    public var endpoints = ["endpoints/*.yaml"]
    /// The directory `sqlFile` paths are relative to, relative to ``baseDirectory``.
    public var sqlDirectory = "../sql"
    /// How many levels an endpoint's details may nest (`maxDetailDepth`): 1 allows details
    /// without details of their own; an endpoint file that nests deeper does not load.
    public var maxDetailDepth = SpoutConfiguration.defaultMaxDetailDepth
    /// The default of ``maxDetailDepth``.
    public static let defaultMaxDetailDepth = 3
    /// The secret page cursors are sealed with (`cursorSecret`); empty: a random one per
    /// process (cursors then do not survive a restart or reach another instance).
    public var cursorSecret = ""
    /// The configuration file read, or nil when only defaults (and overrides) apply.
    public var file: String?
    /// The directory relative paths are resolved against: the configuration file's directory
    /// (`config` under the working directory when there is no file).
    public var baseDirectory: String
    /// The line of `endpoints` in the file, for errors about its patterns.
    var endpointsLine: Int?

    /// The defaults, with relative paths resolved against `baseDirectory`.
    public init(baseDirectory: String = "config") {
        self.baseDirectory = baseDirectory
    }

    /// The file `load(file:)` reads when given none and `SPOUT_CONFIG` is not set.
    public static let defaultFile = "config/spout.yaml"

    /// Loads the configuration.
    ///
    /// - Parameters:
    ///   - file: the YAML file; nil reads `SPOUT_CONFIG` or, failing that, ``defaultFile`` when
    ///     it exists (defaults only otherwise). A file given explicitly must exist.
    ///   - environment: the variables to read `SPOUT_CONFIG` and overrides (`SPOUT_*`) from;
    ///     the process's own environment is never read (the executable passes it).
    ///   - overrides: the executable's command-line values, applied last.
    /// - Throws: ``ConfigurationError`` naming the file, line and problem (or the variable).
    public static func load(
        file: String? = nil,
        environment: [String: String],
        overrides: Overrides = Overrides()
    ) throws(ConfigurationError) -> SpoutConfiguration {
        var path = file ?? environment["SPOUT_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
        if path == nil, FileManager.default.fileExists(atPath: self.defaultFile) { path = self.defaultFile }
        var configuration: SpoutConfiguration
        if let path {
            let text: String
            do {
                text = try String(contentsOfFile: path, encoding: .utf8)
            } catch {
                throw ConfigurationError(file: path, message: "cannot read the configuration file (\(Self.reason(error)))")
            }
            configuration = try Self.parse(text, file: path)
        } else {
            configuration = SpoutConfiguration()
        }
        try configuration.applyEnvironment(environment)
        try configuration.apply(overrides)
        return configuration
    }

    /// Parses configuration YAML; `file` names it in errors and sets ``baseDirectory``.
    public static func parse(_ text: String, file: String) throws(ConfigurationError) -> SpoutConfiguration {
        var configuration = SpoutConfiguration(baseDirectory: (file as NSString).deletingLastPathComponent)
        if configuration.baseDirectory.isEmpty { configuration.baseDirectory = "." }
        configuration.file = file
        guard let root = try YAMLValue.parse(text, file: file), !root.isNull else { return configuration }
        try configuration.read(root, prefix: "")
        return configuration
    }

    private mutating func read(_ value: YAMLValue, prefix: String) throws(ConfigurationError) {
        let children = Self.settings.compactMap { setting -> String? in
            guard setting.path.hasPrefix(prefix) else { return nil }
            return String(setting.path.dropFirst(prefix.count).prefix { $0 != "." })
        }
        var allowed: [String] = []
        for child in children where !allowed.contains(child) { allowed.append(child) }
        let what = prefix.isEmpty ? "the configuration" : "'\(prefix.dropLast())'"
        let mapping = try value.mapping(what, allowed: allowed)
        for entry in mapping.entries {
            let path = prefix + entry.name
            if let setting = Self.settings.first(where: { $0.path == path }) {
                if entry.value.isNull { continue }
                try self.apply(setting, yaml: entry.value)
            } else if !entry.value.isNull {
                try self.read(entry.value, prefix: path + ".")
            }
        }
    }

    private mutating func apply(_ setting: Setting, yaml value: YAMLValue) throws(ConfigurationError) {
        switch setting.kind {
        case .string(let keyPath):
            self[keyPath: keyPath] = try value.nonEmptyString("'\(setting.path)'")
        case .optionalString(let keyPath):
            self[keyPath: keyPath] = try value.string("'\(setting.path)'")
        case .integer(let keyPath, let range):
            self[keyPath: keyPath] = try value.integer("'\(setting.path)'", in: range)
        case .boolean(let keyPath):
            self[keyPath: keyPath] = try value.boolean("'\(setting.path)'")
        case .dateFormat:
            let text = try value.string("'dateFormat'")
            guard let format = DateFormat(rawValue: text) else {
                throw value.error("'dateFormat' must be epoch-ms or iso-8601, not '\(text)'")
            }
            self.dateFormat = format
        case .strings(let keyPath, let check):
            let items = try value.scalarOrSequence("'\(setting.path)'")
            var list: [String] = []
            for item in items {
                let text = try item.nonEmptyString("an entry of '\(setting.path)'").trimmedBlanks
                if let problem = check(text) { throw item.error("'\(setting.path)': \(problem)") }
                list.append(text)
            }
            self[keyPath: keyPath] = list
        case .apiKeys:
            var keys: [Identity.APIKey] = []
            for item in try value.sequence("'identity.apiKeys'") {
                let fields = try item.mapping("an entry of 'identity.apiKeys'", allowed: ["subject", "role", "keyFromEnvironment"])
                guard let subject = fields.value("subject"), let variable = fields.value("keyFromEnvironment") else {
                    throw item.error("an entry of 'identity.apiKeys' needs 'subject' and 'keyFromEnvironment'")
                }
                let key = Identity.APIKey(
                    subject: try subject.nonEmptyString("'subject'"), role: try fields.value("role")?.string("'role'") ?? "",
                    keyFromEnvironment: try variable.nonEmptyString("'keyFromEnvironment'").trimmedBlanks)
                if let problem = Self.apiKeyProblem(key) { throw item.error("'identity.apiKeys': \(problem)") }
                keys.append(key)
            }
            self.identity.apiKeys = keys
        case .list:
            let items = try value.scalarOrSequence("'endpoints'")
            var patterns: [String] = []
            for item in items { patterns.append(try item.nonEmptyString("an entry of 'endpoints'")) }
            self.endpoints = patterns
            self.endpointsLine = value.line
        }
    }

    /// Applies `SPOUT_*` variables from `environment`.
    public mutating func applyEnvironment(_ environment: [String: String]) throws(ConfigurationError) {
        for setting in Self.settings {
            guard let text = environment[setting.environmentVariable] else { continue }
            let fail = { (problem: String) in
                ConfigurationError(file: "environment", message: "\(setting.environmentVariable): \(problem)")
            }
            switch setting.kind {
            case .string(let keyPath):
                guard !text.trimmedBlanks.isEmpty else { throw fail("must not be empty") }
                self[keyPath: keyPath] = text
            case .optionalString(let keyPath):
                self[keyPath: keyPath] = text
            case .integer(let keyPath, let range):
                guard let value = Int(text.trimmedBlanks) else { throw fail("must be an integer, not '\(text)'") }
                guard range.contains(value) else {
                    throw fail("must be in \(range.lowerBound)...\(range.upperBound), not \(value)")
                }
                self[keyPath: keyPath] = value
            case .boolean(let keyPath):
                switch text.trimmedBlanks.lowercased() {
                case "true", "1": self[keyPath: keyPath] = true
                case "false", "0": self[keyPath: keyPath] = false
                default: throw fail("must be true or false, not '\(text)'")
                }
            case .dateFormat:
                guard let format = DateFormat(rawValue: text.trimmedBlanks) else {
                    throw fail("must be epoch-ms or iso-8601, not '\(text)'")
                }
                self.dateFormat = format
            case .strings(let keyPath, let check):
                // Comma-separated; an empty variable sets an empty list (for origins: CORS off).
                let items = text.split(separator: ",").map { $0.trimmedBlanks }.filter { !$0.isEmpty }
                for item in items {
                    if let problem = check(item) { throw fail(problem) }
                }
                self[keyPath: keyPath] = items
            case .apiKeys:
                // SUBJECT:ROLE:VARIABLE, comma-separated (ROLE may be empty).
                var keys: [Identity.APIKey] = []
                for item in text.split(separator: ",").map({ $0.trimmedBlanks }).filter({ !$0.isEmpty }) {
                    let fields = item.split(separator: ":", omittingEmptySubsequences: false).map { $0.trimmedBlanks }
                    guard fields.count == 3, !fields[0].isEmpty else {
                        throw fail("each entry is SUBJECT:ROLE:VARIABLE (ROLE may be empty), not '\(item)'")
                    }
                    let key = Identity.APIKey(subject: fields[0], role: fields[1], keyFromEnvironment: fields[2])
                    if let problem = Self.apiKeyProblem(key) { throw fail(problem) }
                    keys.append(key)
                }
                self.identity.apiKeys = keys
            case .list:
                let patterns = text.split(separator: ",").map { $0.trimmedBlanks }.filter { !$0.isEmpty }
                guard !patterns.isEmpty else { throw fail("must list at least one endpoint file") }
                self.endpoints = patterns
                self.endpointsLine = nil
            }
        }
    }

    /// Applies the executable's overrides.
    public mutating func apply(_ overrides: Overrides) throws(ConfigurationError) {
        if let host = overrides.host { self.server.host = host }
        if let port = overrides.port {
            guard (0...65_535).contains(port) else {
                throw ConfigurationError(file: "command line", message: "the port must be in 0...65535, not \(port)")
            }
            self.server.port = port
        }
        if let url = overrides.databaseURL { self.database.url = url }
    }

    // MARK: Derived values

    /// ``sqlDirectory`` resolved against ``baseDirectory``.
    public var resolvedSQLDirectory: String { Self.resolve(self.sqlDirectory, against: self.baseDirectory) }

    /// The pool and encoding settings for `Drivers.open(_:configuration:)`.
    /// How live notices run (``LiveNoticeSettings``), from `server.heartbeatSeconds`,
    /// `server.limits.maxSubscribers`, `server.limits.maxSubscribersPerAddress` and
    /// `database.changePollMs`.
    public var liveNoticeSettings: LiveNoticeSettings {
        var settings = LiveNoticeSettings()
        settings.heartbeat = .seconds(self.server.heartbeatSeconds)
        settings.pollInterval = .milliseconds(self.database.changePollMs)
        settings.maximumSubscribers = self.server.limits.maxSubscribers
        settings.maximumSubscribersPerAddress = self.server.limits.maxSubscribersPerAddress
        return settings
    }

    public var databaseConfiguration: DatabaseConfiguration {
        DatabaseConfiguration(
            maximumConnections: self.database.poolSize,
            acquireTimeout: .milliseconds(self.database.acquireTimeoutMs),
            fetchSize: self.database.fetchSize,
            preparedStatements: self.database.preparedStatements,
            dateFormat: self.dateFormat,
            statementTimeout: self.defaultStatementTimeout,
            streamReserve: self.database.streamReserve,
            streamAcquireTimeout: .milliseconds(self.database.streamAcquireTimeoutMs),
            applicationName: self.database.applicationName.isEmpty ? nil : self.database.applicationName,
            answerGraceMilliseconds: self.database.answerGraceMs,
            sharedReaders: self.database.sharedReaders
        )
    }

    /// The HTTP server's settings.
    public var serverConfiguration: ServerConfiguration {
        let limits = self.server.limits
        let cors = self.server.cors
        var configuration = ServerConfiguration(
            host: self.server.host,
            port: self.server.port,
            maximumHeadSize: limits.maxHeaderBytes,
            maximumBodySize: limits.maxBodyBytes,
            idleTimeout: .seconds(limits.idleTimeoutSeconds),
            maximumConnections: limits.maxConnections,
            drainTimeout: .seconds(limits.drainTimeoutSeconds),
            socketSendBufferSize: limits.socketSendBufferBytes > 0 ? limits.socketSendBufferBytes : nil,
            cors: CORSPolicy(
                allowedOrigins: cors.allowedOrigins, allowedHeaders: cors.allowedHeaders, maxAgeSeconds: cors.maxAgeSeconds),
            requestHeadTimeout: .seconds(limits.headTimeoutSeconds),
            requestBodyTimeout: .seconds(limits.bodyTimeoutSeconds),
            maximumConnectionsPerAddress: limits.maxConnectionsPerAddress,
            trustedProxies: limits.trustedProxies
        )
        configuration.timingHeader = self.server.timingHeader
        configuration.maximumStreamsPerAddress = limits.maxStreamsPerAddress
        configuration.maximumBufferedBodyBytes = limits.maxBufferedBodyBytes
        let spool = self.server.spool
        configuration.spool = SpoolConfiguration(
            isEnabled: spool.enabled, directory: spool.directory.isEmpty ? nil : Self.resolve(spool.directory, against: self.baseDirectory),
            memoryBytesPerStream: spool.memoryBytesPerStream, maximumBytesPerStream: spool.maxBytesPerStream, maximumBytes: spool.maxBytes)
        return configuration
    }

    /// The statement timeout of endpoints that declare none; nil when disabled.
    public var defaultStatementTimeout: Duration? {
        self.database.statementTimeoutMs > 0 ? .milliseconds(self.database.statementTimeoutMs) : nil
    }

    /// The endpoint files: every pattern of ``endpoints`` expanded, each pattern's matches in
    /// name order. A pattern without wildcards names a file that must exist; a pattern with
    /// wildcards must match at least one file.
    public func endpointFiles() throws(ConfigurationError) -> [String] {
        var files: [String] = []
        for pattern in self.endpoints {
            let matches = try FilePattern.expand(Self.resolve(pattern, against: self.baseDirectory))
            guard !matches.isEmpty else {
                throw ConfigurationError(
                    file: self.file ?? "configuration", line: self.endpointsLine,
                    message: "no endpoint file matches '\(pattern)' (relative to \(self.baseDirectory))")
            }
            for match in matches where !files.contains(match) { files.append(match) }
        }
        return files
    }

    static func resolve(_ path: String, against directory: String) -> String {
        if path.hasPrefix("/") { return path }
        return ((directory as NSString).appendingPathComponent(path) as NSString).standardizingPath
    }

    static func reason(_ error: any Error) -> String {
        if let error = error as? CocoaError, let underlying = error.userInfo[NSUnderlyingErrorKey] as? POSIXError {
            return String(describing: underlying.code)
        }
        if let error = error as? CocoaError, error.code == .fileReadNoSuchFile { return "no such file" }
        return (error as NSError).localizedDescription
    }
}
