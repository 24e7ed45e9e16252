import ArgumentParser
import Foundation
import Logging
import SpoutCore
import SpoutData
import SpoutDrivers
import SpoutEndpoints
import ServiceLifecycle
import SpoutHTTP

/// `spout serve` (the default command): the endpoints of config/ over HTTP.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the endpoints declared in the configuration (the default command).",
        discussion: """
            Settings come from the configuration file, then SPOUT_* environment variables, then \
            these flags. A SQLite database file that does not exist yet is created and seeded \
            with generated employees and the pets (unless --no-seed).
            """
    )

    @Option(help: "The configuration file (default: config/spout.yaml, or $SPOUT_CONFIG).")
    var config: String?

    @Option(help: "The address to listen on (overrides server.host).")
    var host: String?

    @Option(help: "The port to listen on; 0 picks a free one (overrides server.port).")
    var port: Int?

    @Option(help: "The database URL: postgresql://… or sqlite:PATH (overrides database.url).")
    var database: String?

    @Flag(help: "Do not seed a new SQLite database with the sample data.")
    var noSeed = false

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = ProcessInfo.processInfo.environment["SPOUT_LOG_LEVEL"] ?? "info"

    @Option(help: "Log format: text (one line per entry) or json (one JSON object per line).")
    var logFormat: String = ProcessInfo.processInfo.environment["SPOUT_LOG_FORMAT"] ?? "text"

    func validate() throws {
        guard LineLogHandler.Format(rawValue: self.logFormat) != nil else {
            throw ValidationError("--log-format (or SPOUT_LOG_FORMAT) is text or json, not '\(self.logFormat)'")
        }
    }

    func run() async throws {
        let level = Logger.Level(rawValue: self.logLevel) ?? .info
        let format = LineLogHandler.Format(rawValue: self.logFormat) ?? .text
        LoggingSystem.bootstrap { label in
            var handler = LineLogHandler.standardError(label: label, format: format)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "spout")

        // A ConfigurationError is printed alone (no usage) with status 78 by Spout.main.
        let environment = ProcessInfo.processInfo.environment
        let settings = try SpoutConfiguration.load(
            file: self.config, environment: environment,
            overrides: .init(host: self.host, port: self.port, databaseURL: self.database)
        )
        var loaded = try EndpointSet.load(configuration: settings, environment: environment)

        if loaded.tokenVerifier == nil && loaded.endpoints.contains(where: { $0.tokenPolicy != nil }) {
            logger.notice(
                "no key verifies tokens: endpoints with 'auth: {token: jwt}' refuse every token (401); set \(settings.identity.secretFromEnvironment), identity.jwksFile, identity.jwksUrl or identity.apiKeys (the same on every instance behind one load balancer)"
            )
        }
        if let verifier = loaded.tokenVerifier, verifier.hasKeyURL {
            // Fetched before the first request, so that it does not wait; a failure is logged
            // and retried on use (every identity.jwksCooldownSeconds at most).
            let count = await verifier.publicKeys.refreshNow()
            logger.info("identity.jwksUrl: \(count) keys held", metadata: ["keys": "\(count)"])
        }

        let url = Self.embeddedDatabaseURL(settings.database.url, logger: logger)
        if settings.database.seed.enabled && !self.noSeed {
            // The sample data belongs to the shipped example: a service whose SQL directory
            // lacks its scripts (a service of one's own) gets an empty database (docs/configuration.md).
            let sqlDirectory = settings.resolvedSQLDirectory
            let employees = SQLiteSeeder.hasScripts(sqlDirectory: sqlDirectory) ? settings.database.seed.employees : nil
            try await Self.createIfNew(url: url, seedingEmployees: employees, sqlDirectory: sqlDirectory, logger: logger)
        }
        // The databases' metrics share the server's registry: one /metrics.
        let metrics = settings.server.metrics.enabled ? ServerMetrics() : nil
        let databaseMetrics = metrics.map { DatabaseMetrics(registry: $0.registry) }
        let database = try Drivers.open(
            url, replicaURLs: settings.database.replicaUrls,
            maximumLag: settings.database.replicaMaxLagMs > 0 ? .milliseconds(settings.database.replicaMaxLagMs) : nil,
            configuration: settings.databaseConfiguration,
            observer: ObserverPair.combining(databaseMetrics, DatabaseEventLog(logger: logger)))
        // Every statement prepares, or the start stops at the first that does not (file, line,
        // the database's message). A database that does not answer within a few seconds
        // delays nothing: the statements are then not checked, and the log says so.
        // The columns it describes type the OpenAPI document's responses.
        loaded.resultColumns = try await Self.checkStatements(loaded, on: database, within: .seconds(5), logger: logger)
        let endpoints = loaded
        // Syncable endpoints need the change log. A tracked table or column that is not there is
        // logged at its line, and those reads answer 503; a database that does not answer
        // within a few seconds delays nothing: sync reads wait (503) until ChangeLogService has
        // prepared it.
        if !endpoints.trackedTables.isEmpty {
            await Self.prepareSync(endpoints, on: database, within: .seconds(3), logger: logger)
        }
        let metricsPort = settings.server.metrics.port
        // Page cursor keys every instance on the database shares, and the settings they compare.
        let keys = InstanceKeys(cursorSecret: settings.cursorSecret, database: database, logger: logger)
        var served = endpoints
        served.noticeMetrics = metrics.map { NoticeMetrics(registry: $0.registry) }
        var router = served.makeRouter(database: database, logger: logger, keys: keys)
        if let metrics, let databaseMetrics, metricsPort == 0 {
            router.addMetrics(metrics, databaseMetrics: databaseMetrics, databases: [database])
        }
        let tracing = try TracingBackend.make(settings.tracing, environment: environment, logger: logger)
        if tracing != nil { logger.info("tracing: spans are exported over OTLP/HTTP") }
        let server = HTTPServer(
            router: router,
            configuration: settings.serverConfiguration,
            logger: logger,
            metrics: metrics,
            tracer: tracing?.tracer,
            reservedFileDescriptors: database.reservedFileDescriptors
        )
        // With server.metrics.port, the metrics are served there only (with /health).
        let admin: HTTPServer? = metrics.flatMap { metrics in
            guard metricsPort != 0, let databaseMetrics else { return nil }
            var router = Router()
            router.addMetrics(metrics, databaseMetrics: databaseMetrics, databases: [database])
            return HTTPServer(
                router: router,
                configuration: ServerConfiguration(
                    host: settings.server.metrics.host, port: metricsPort, eventLoopThreads: 1, compression: false),
                logger: Logger(label: "spout.metrics"))
        }
        // From here a signal shuts the service down gracefully, even before the group runs.
        let signals = await ShutdownSignals.trap(logger: logger)
        try await admin?.start()
        try await server.start()
        // Optional filters no index serves and parameters declared unlike the database reads
        // them, where the database can say so: a few catalog reads and prepared statements,
        // off the startup path (a database still starting delays nothing).
        Task.detached {
            for message in await endpoints.rowSecurityBypassWarnings(on: database) {
                logger.error("\(message)")
            }
            for message in await endpoints.unindexedFilters(on: database) + endpoints.parameterTypeConflicts(on: database) {
                logger.warning("\(message)")
            }
        }
        // Where page cursor keys come from, and the settings another instance on the same
        // database has otherwise (docs/scaling.md, "Many instances"), off the startup path too.
        let shared = SharedSetting.of(settings, environment: ProcessInfo.processInfo.environment)
        Task.detached {
            await keys.start(pagedEndpoints: endpoints.endpoints.contains { $0.page != nil }, settings: shared)
        }
        let port = server.boundPort ?? settings.server.port
        let shownHost = ["0.0.0.0", "::", ""].contains(settings.server.host) ? "127.0.0.1" : settings.server.host
        logger.notice("listening on http://\(shownHost):\(port)", metadata: [
            "database": .string(Self.redacted(url)),
            "endpoints": .stringConvertible(endpoints.endpoints.count),
            "replicas": .stringConvertible(settings.database.replicaUrls.count),
            "try": .string(StartHint.curl(base: "http://\(shownHost):\(port)", endpoints: endpoints)),
        ])

        // SIGTERM, SIGINT or SIGHUP (a closed terminal, a supervisor's hangup; Spout reloads
        // nothing): the server logs "shutting down", and the services stop in the reverse of
        // this order, each once the one after it has returned: the server drains its in-flight
        // responses (`server.drainTimeoutSeconds`), then the metrics port closes, then the
        // database (waiting for what runs on its threads), then the span exporter, which sends
        // the spans still batched.
        let pruner: [any Service] =
            endpoints.trackedTables.isEmpty
            ? []
            : [
                ChangeLogService(
                    endpoints: endpoints, database: database, retention: .seconds(settings.database.changeRetentionHours * 3_600),
                    interval: .seconds(600), retry: .seconds(30), logger: logger)
            ]
        let pruners: [any Service] =
            pruner + [IdempotencyPruner(state: endpoints.idempotencyState, database: database, interval: .seconds(600), logger: logger)]
        let services: [any Service] =
            (tracing.map { [$0.service] } ?? []) + [DatabaseService(database: database, logger: logger)] + pruners + (admin.map { [$0] } ?? [])
            + [server]
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) }, logger: logger))
        await signals.shut(group)
        try await group.run()
        logger.notice("stopped")
    }

    /// Prepares every statement of `endpoints` on `database` without running it
    /// (``SpoutEndpoints/EndpointSet/statementProblems(on:)``) if the database can be reached
    /// within `limit`: throws a ``SpoutEndpoints/ConfigurationError`` listing the statements it
    /// refuses, one `file:line: message` per line (the start stops, status 78). A database that
    /// cannot be reached, does not answer in time, or fails during the check is logged and the
    /// check skipped: Spout starts while its database is down. Only reaching it is bounded: a
    /// database that answers is given the time the check takes (a few round trips per
    /// statement).
    /// Returns the columns the database described (``SpoutEndpoints/EndpointSet/resultColumns``),
    /// empty when the check was skipped.
    static func checkStatements(
        _ endpoints: EndpointSet, on database: Database, within limit: Duration, logger: Logger
    ) async throws -> [String: [String: [Column]]] {
        let reaching = Task { try await database.withSession(DatabaseWork(readOnly: true)) { session in try await session.run { _ in } } }
        switch await Self.result(of: reaching, within: limit) {
        case .success?:
            break
        case .failure(let error)?:
            logger.warning(
                "the endpoints' SQL is not checked: the database cannot be reached (spout check checks it)",
                metadata: ["error": "\(String(reflecting: error))"])
            return [:]
        case nil:
            reaching.cancel()
            logger.warning(
                "the endpoints' SQL is not checked: the database did not answer within \(limit.components.seconds) s of the start (spout check checks it)")
            return [:]
        }
        let check: StatementCheck
        do {
            check = try await endpoints.statementCheck(on: database)
        } catch {
            logger.warning(
                "the endpoints' SQL is not checked: the database failed during the check (spout check checks it)",
                metadata: ["error": "\(String(reflecting: error))"])
            return [:]
        }
        if let error = StatementProblem.configurationError(check.problems) { throw error }
        logger.debug("every statement prepares", metadata: ["endpoints": .stringConvertible(endpoints.endpoints.count)])
        return check.resultColumns
    }

    /// What `task` ends with if it ends within `limit`; nil otherwise (the task goes on).
    static func result<T: Sendable>(of task: Task<T, any Error>, within limit: Duration) async -> Result<T, any Error>? {
        let outcome = await withTaskGroup(of: Result<T, any Error>?.self) { group in
            group.addTask { await task.result }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        return outcome
    }

    /// Prepares `database` for the sync reads of `endpoints` if it answers within `limit`;
    /// a table or column the database lacks is logged as an error at its line, and any other
    /// failure, or no answer in time, is logged and left to ``ChangeLogService``.
    static func prepareSync(_ endpoints: EndpointSet, on database: Database, within limit: Duration, logger: Logger) async {
        let preparation = Task { try await endpoints.prepareSync(on: database) }
        switch await Self.result(of: preparation, within: limit) {
        case .success?: return
        case .failure(let error as ConfigurationError)?:
            logger.error("sync reads answer 503: \(error)")
        case .failure(let error as ChangeTrackingNotSetUp)?:
            logger.error("\(error)")
        case .failure(let error)?:
            logger.warning("sync reads wait: the database cannot be prepared for them yet", metadata: ["error": "\(error)"])
        case nil:
            logger.warning("sync reads wait: the database did not answer within \(limit.components.seconds) s of the start")
        }
    }

    /// The URL to open for `url`: itself, unless it is the embedded default
    /// (`sqlite:data/spout.sqlite`, relative to the working directory) and this user may not
    /// write that folder (a checkout owned by someone else). Then a folder of this user's in
    /// the temporary directory (`spout-UID`, mode 0700, used only when this user owns it) holds
    /// the database, and the log says where and how to keep it elsewhere. A URL the user chose
    /// (`--database`, `SPOUT_DATABASE_URL`, another `database.url`) is never replaced: its
    /// problems are reported as they are.
    static func embeddedDatabaseURL(_ url: String, logger: Logger) -> String {
        guard url == SpoutConfiguration.DatabaseSettings().url else { return url }
        let manager = FileManager.default
        let directory = (String(url.dropFirst("sqlite:".count)) as NSString).deletingLastPathComponent
        if (try? manager.createDirectory(atPath: directory, withIntermediateDirectories: true)) != nil,
            manager.isWritableFile(atPath: directory)
        {
            return url
        }
        let fallback = (NSTemporaryDirectory() as NSString).appendingPathComponent("spout-\(getuid())")
        try? manager.createDirectory(atPath: fallback, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        guard let owner = (try? manager.attributesOfItem(atPath: fallback))?[.ownerAccountID] as? NSNumber,
            owner.uint32Value == getuid(), manager.isWritableFile(atPath: fallback)
        else { return url }
        let path = (fallback as NSString).appendingPathComponent("spout.sqlite")
        logger.notice(
            "this user (uid \(getuid())) cannot write \(directory)/ here: the embedded database is \(path), which lasts as long as the temporary folder; --database sqlite:/path/you/own/spout.sqlite keeps it elsewhere"
        )
        return "sqlite:" + path
    }

    /// Creates a SQLite database whose file does not exist yet, with the sample data
    /// (`seedingEmployees` generated employees and the pets) or, when that is nil, empty.
    /// PostgreSQL and `sqlite::memory:` databases are left alone.
    static func createIfNew(url: String, seedingEmployees employees: Int?, sqlDirectory: String, logger: Logger) async throws {
        guard url.hasPrefix("sqlite:") else { return }
        let path = String(url.dropFirst("sqlite:".count))
        guard path != ":memory:", !FileManager.default.fileExists(atPath: path) else { return }
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                // Foundation's own text ("You don't have permission") names neither the folder
                // nor a way out.
                throw StartupError(
                    description: "cannot create the folder \(directory) for the SQLite database \(path) (running as uid \(getuid())): "
                        + "run spout from a directory this user can write, or give a database it can: "
                        + "--database sqlite:/path/you/own/spout.sqlite (or SPOUT_DATABASE_URL)")
            }
        }
        let database = try Drivers.open(url, configuration: DatabaseConfiguration(maximumConnections: 1))
        defer { database.close() }
        guard let employees else {
            try await database.run(readOnly: false) { _ in }
            logger.notice(
                "created \(path), an empty SQLite database: \(sqlDirectory) has no sample-data scripts, so nothing is seeded (docs/configuration.md, Sample data)"
            )
            return
        }
        logger.notice("creating \(path) and seeding it with \(employees) generated employees and the pets")
        do {
            let report = try await database.run(readOnly: false) { connection in
                try SQLiteSeeder.seedIfMissing(connection: connection, sqlDirectory: sqlDirectory, employees: employees)
            }
            logger.notice("seeded \(path) in \(String(format: "%.1f", report.seconds)) s", metadata: [
                "rows": .stringConvertible((report.employees?.totalRows ?? 0) + (report.pets ?? 0)),
            ])
        } catch {
            database.close()
            try? FileManager.default.removeItem(atPath: path)
            try? FileManager.default.removeItem(atPath: path + "-wal")
            try? FileManager.default.removeItem(atPath: path + "-shm")
            // A DatabaseError's description leaves its message out (it is safe for HTTP
            // clients); on standard error at startup the operator needs the path and the reason.
            if let error = error as? DatabaseError { throw StartupError(description: String(reflecting: error)) }
            throw error
        }
    }

    /// The URL with its passwords replaced by `***`, for logs: the user-info password and
    /// every `password=` query parameter (libpq accepts both).
    static func redacted(_ url: String) -> String {
        var url = url
        if let scheme = url.range(of: "://") {
            let authorityEnd = url[scheme.upperBound...].firstIndex { $0 == "/" || $0 == "?" } ?? url.endIndex
            if let at = url[scheme.upperBound..<authorityEnd].lastIndex(of: "@"),
               let colon = url[scheme.upperBound..<at].firstIndex(of: ":") {
                url.replaceSubrange(url.index(after: colon)..<at, with: "***")
            }
        }
        guard let query = url.firstIndex(of: "?") else { return url }
        let pairs = url[url.index(after: query)...].split(separator: "&", omittingEmptySubsequences: false).map { pair in
            pair.hasPrefix("password=") ? "password=***" : String(pair)
        }
        return String(url[...query]) + pairs.joined(separator: "&")
    }
}

/// A failure to start, printed whole on standard error.
struct StartupError: Error, CustomStringConvertible {
    let description: String
}
