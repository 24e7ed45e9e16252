import Foundation
import SpoutCore
import SpoutEndpoints
import Testing

@Suite("Configuration")
struct ConfigurationTests {
    @Test("the shipped config/spout.yaml holds the documented defaults")
    func shippedFile() throws {
        let configuration = try SpoutConfiguration.load(file: Repository.configFile, environment: [:])
        #expect(configuration.server.host == "127.0.0.1")
        #expect(configuration.server.port == 8080)
        #expect(configuration.server.limits.maxBodyBytes == 1_048_576)
        #expect(configuration.database.url == "sqlite:data/spout.sqlite")
        #expect(configuration.database.seed.employees == 20_000)
        #expect(configuration.database.seed.enabled)
        #expect(configuration.dateFormat == .epochMilliseconds)
        #expect(configuration.resolvedSQLDirectory == Repository.sqlDirectory)
        let files = try configuration.endpointFiles().map { ($0 as NSString).lastPathComponent }
        #expect(files == ["employees.yaml", "pets.yaml"])
    }

    @Test("an empty file gives every default")
    func emptyFile() throws {
        let configuration = try SpoutConfiguration.parse("", file: "/tmp/x/spout.yaml")
        #expect(configuration.server.port == 8080)
        #expect(configuration.database.poolSize == 8)
        #expect(configuration.database.acquireTimeoutMs == 5_000)
        #expect(configuration.database.statementTimeoutMs == 30_000)
        #expect(configuration.endpoints == ["endpoints/*.yaml"])
        #expect(configuration.resolvedSQLDirectory == "/tmp/sql")
        #expect(configuration.baseDirectory == "/tmp/x")
    }

    @Test("values from the file")
    func fileValues() throws {
        let yaml = """
            server:
              host: 0.0.0.0
              port: 9000
              limits:
                maxConnections: 10
            database:
              url: postgresql://spout@localhost/spout
              poolSize: 3
              statementTimeoutMs: 0
              seed: {enabled: false}
            dateFormat: iso-8601
            endpoints: [a.yaml, more/*.yaml]
            sqlDirectory: /srv/sql
            """
        let configuration = try SpoutConfiguration.parse(yaml, file: "conf/spout.yaml")
        #expect(configuration.server.host == "0.0.0.0")
        #expect(configuration.server.port == 9000)
        #expect(configuration.server.limits.maxConnections == 10)
        #expect(configuration.server.limits.maxHeaderBytes == 16_384)
        #expect(configuration.database.url == "postgresql://spout@localhost/spout")
        #expect(configuration.database.poolSize == 3)
        #expect(configuration.defaultStatementTimeout == nil)
        #expect(!configuration.database.seed.enabled)
        #expect(configuration.database.seed.employees == 20_000)
        #expect(configuration.dateFormat == .iso8601)
        #expect(configuration.endpoints == ["a.yaml", "more/*.yaml"])
        #expect(configuration.resolvedSQLDirectory == "/srv/sql")
        #expect(configuration.databaseConfiguration.maximumConnections == 3)
        #expect(configuration.databaseConfiguration.dateFormat == .iso8601)
        #expect(configuration.serverConfiguration.maximumConnections == 10)
        #expect(configuration.serverConfiguration.port == 9000)
    }

    @Test("environment variables win over the file, explicit overrides over both")
    func layering() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write("spout.yaml", "server:\n  port: 9000\n  host: 10.0.0.1\ndatabase:\n  poolSize: 3\n")
        let environment = [
            "SPOUT_PORT": "9100",
            "SPOUT_DATABASE_POOL_SIZE": "12",
            "SPOUT_DATABASE_URL": "sqlite:/tmp/env.sqlite",
            "SPOUT_LIMITS_MAX_BODY_BYTES": "2048",
            "SPOUT_DATABASE_SEED_ENABLED": "false",
            "SPOUT_DATE_FORMAT": "iso-8601",
            "SPOUT_ENDPOINTS": "x.yaml, y/*.yaml",
            "UNRELATED": "1",
        ]
        var configuration = try SpoutConfiguration.load(file: file, environment: environment)
        #expect(configuration.server.port == 9100)
        #expect(configuration.server.host == "10.0.0.1")
        #expect(configuration.database.poolSize == 12)
        #expect(configuration.database.url == "sqlite:/tmp/env.sqlite")
        #expect(configuration.server.limits.maxBodyBytes == 2048)
        #expect(!configuration.database.seed.enabled)
        #expect(configuration.dateFormat == .iso8601)
        #expect(configuration.endpoints == ["x.yaml", "y/*.yaml"])

        configuration = try SpoutConfiguration.load(
            file: file, environment: environment,
            overrides: .init(host: "::", port: 0, databaseURL: "postgresql://spout@127.0.0.1/x"))
        #expect(configuration.server.host == "::")
        #expect(configuration.server.port == 0)
        #expect(configuration.database.url == "postgresql://spout@127.0.0.1/x")
    }

    @Test("every scalar key has one environment variable, named by the rule")
    func environmentNames() {
        let table = Dictionary(uniqueKeysWithValues: SpoutConfiguration.environmentVariables.map { ($0.key, $0.variable) })
        #expect(table["server.host"] == "SPOUT_HOST")
        #expect(table["server.port"] == "SPOUT_PORT")
        #expect(table["server.limits.idleTimeoutSeconds"] == "SPOUT_LIMITS_IDLE_TIMEOUT_SECONDS")
        #expect(table["database.url"] == "SPOUT_DATABASE_URL")
        #expect(table["database.poolSize"] == "SPOUT_DATABASE_POOL_SIZE")
        #expect(table["database.acquireTimeoutMs"] == "SPOUT_DATABASE_ACQUIRE_TIMEOUT_MS")
        #expect(table["database.seed.employees"] == "SPOUT_DATABASE_SEED_EMPLOYEES")
        #expect(table["sqlDirectory"] == "SPOUT_SQL_DIRECTORY")
        #expect(table["server.limits.socketSendBufferBytes"] == "SPOUT_LIMITS_SOCKET_SEND_BUFFER_BYTES")
        #expect(table["server.limits.maxConnectionsPerAddress"] == "SPOUT_LIMITS_MAX_CONNECTIONS_PER_ADDRESS")
        #expect(table["database.fetchSize"] == "SPOUT_DATABASE_FETCH_SIZE")
        #expect(table["database.preparedStatements"] == "SPOUT_DATABASE_PREPARED_STATEMENTS")
        #expect(table["database.replicaUrls"] == "SPOUT_DATABASE_REPLICA_URLS")
        #expect(table["server.metrics.port"] == "SPOUT_METRICS_PORT")
        #expect(table["server.timingHeader"] == "SPOUT_TIMING_HEADER")
        #expect(table["cursorSecret"] == "SPOUT_CURSOR_SECRET")
        #expect(table["server.spool.maxBytesPerStream"] == "SPOUT_SPOOL_MAX_BYTES_PER_STREAM")
        #expect(table["server.limits.maxStreamsPerAddress"] == "SPOUT_LIMITS_MAX_STREAMS_PER_ADDRESS")
        #expect(table["database.streamReserve"] == "SPOUT_DATABASE_STREAM_RESERVE")
        #expect(table["database.applicationName"] == "SPOUT_DATABASE_APPLICATION_NAME")
        #expect(table["maxDetailDepth"] == "SPOUT_MAX_DETAIL_DEPTH")
        #expect(table["identity.jwksUrl"] == "SPOUT_IDENTITY_JWKS_URL")
        #expect(table["identity.apiKeys"] == "SPOUT_IDENTITY_API_KEYS")
        #expect(table["database.traceContext"] == "SPOUT_DATABASE_TRACE_CONTEXT")
        #expect(table["tracing.samplePercent"] == "SPOUT_TRACING_SAMPLE_PERCENT")
        #expect(table["database.answerGraceMs"] == "SPOUT_DATABASE_ANSWER_GRACE_MS")
        #expect(table["server.limits.maxBufferedBodyBytes"] == "SPOUT_LIMITS_MAX_BUFFERED_BODY_BYTES")
        #expect(table["server.limits.maxSubscribersPerAddress"] == "SPOUT_LIMITS_MAX_SUBSCRIBERS_PER_ADDRESS")
        #expect(table["database.changePollMs"] == "SPOUT_DATABASE_CHANGE_POLL_MS")
        #expect(table["database.sharedReaders"] == "SPOUT_DATABASE_SHARED_READERS")
        #expect(table.count == 73)
        #expect(Set(table.values).count == table.count)
    }

    @Test("a bad environment value names the variable")
    func badEnvironment() throws {
        let error = #expect(throws: ConfigurationError.self) {
            try SpoutConfiguration.load(file: Repository.configFile, environment: ["SPOUT_PORT": "eighty"])
        }
        #expect(error?.description == "environment: SPOUT_PORT: must be an integer, not 'eighty'")
        let range = #expect(throws: ConfigurationError.self) {
            try SpoutConfiguration.load(file: Repository.configFile, environment: ["SPOUT_DATABASE_POOL_SIZE": "0"])
        }
        #expect(range?.message == "SPOUT_DATABASE_POOL_SIZE: must be in 1...1000, not 0")
        let format = #expect(throws: ConfigurationError.self) {
            try SpoutConfiguration.load(file: Repository.configFile, environment: ["SPOUT_DATE_FORMAT": "unix"])
        }
        #expect(format?.message == "SPOUT_DATE_FORMAT: must be epoch-ms or iso-8601, not 'unix'")
    }

    @Test(
        "file errors name the file, the line and the problem",
        arguments: [
            ("server:\n  port: 80\n  hots: x\n", 3, "unknown key 'hots' in 'server' (known keys: host, port, limits, spool, cors, timingHeader, heartbeatSeconds, metrics)"),
            ("server:\n  port: eighty\n", 2, "'server.port' must be an integer, not 'eighty'"),
            ("server:\n  port: 70000\n", 2, "'server.port' must be in 0...65535, not 70000"),
            ("database:\n  seed:\n    enabled: yes\n", 3, "'database.seed.enabled' must be true or false, not 'yes'"),
            ("dateFormat: unix\n", 1, "'dateFormat' must be epoch-ms or iso-8601, not 'unix'"),
            ("server: 8080\n", 1, "'server' must be a mapping (key: value lines)"),
            ("databse:\n  url: x\n", 1, "unknown key 'databse' in the configuration (known keys: server, database, identity, tracing, dateFormat, endpoints, sqlDirectory, maxDetailDepth, cursorSecret)"),
            ("server:\n  port: 1\n  port: 2\n", 3, "duplicate key 'port' in the same mapping"),
        ])
    func fileErrors(yaml: String, line: Int, message: String) throws {
        let error = #expect(throws: ConfigurationError.self) {
            try SpoutConfiguration.parse(yaml, file: "config/spout.yaml")
        }
        #expect(error?.file == "config/spout.yaml")
        #expect(error?.line == line)
        #expect(error?.message == message)
    }

    @Test("a missing explicit file is an error; endpoint patterns must match")
    func missingFiles() throws {
        let missing = #expect(throws: ConfigurationError.self) {
            try SpoutConfiguration.load(file: "/nonexistent/spout.yaml", environment: [:])
        }
        #expect(missing?.file == "/nonexistent/spout.yaml")
        let directory = try TemporaryDirectory()
        let file = try directory.write("spout.yaml", "# comment\nendpoints:\n  - none/*.yaml\n")
        let configuration = try SpoutConfiguration.load(file: file, environment: [:])
        let error = #expect(throws: ConfigurationError.self) { try configuration.endpointFiles() }
        #expect(error?.file == file)
        #expect(error?.line == 3)
        #expect(error?.message.hasPrefix("no endpoint file matches 'none/*.yaml'") == true)
    }
}

/// A temporary directory removed when the value is deinitialized.
final class TemporaryDirectory {
    let path: String

    init() throws {
        self.path = FileManager.default.temporaryDirectory.appendingPathComponent("spout-endpoints-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: self.path, withIntermediateDirectories: true)
    }

    /// Writes `text` to `relativePath` (creating directories) and returns the full path.
    @discardableResult
    func write(_ relativePath: String, _ text: String) throws -> String {
        let full = (self.path as NSString).appendingPathComponent(relativePath)
        try FileManager.default.createDirectory(
            atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: full, atomically: true, encoding: .utf8)
        return full
    }

    deinit {
        try? FileManager.default.removeItem(atPath: self.path)
    }
}
