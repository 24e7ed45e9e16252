import CLibPQ
import SpoutCore

#if canImport(Glibc)
import Glibc
#endif

/// Opens libpq connections to one PostgreSQL database.
///
/// The URL (`postgresql://user:password@host:port/database?options`, or `postgres://...`)
/// is handed to libpq unchanged, so every libpq connection parameter works. The password is
/// never part of an error: messages are redacted before they leave the driver.
///
/// Every connection names itself to the server: ``applicationName`` is sent as libpq's
/// `fallback_application_name`, so `pg_stat_activity`, `log_line_prefix` (`%a`) and PgBouncer
/// (which passes the startup parameter on to its server connections) show it, while an
/// `application_name` the URL sets itself, or `PGAPPNAME`, still wins, as libpq intends for a
/// program's default name.
///
/// A server that stops answering must not hold Spout's threads or connections for ever (see
/// ``PostgresAnswerDeadline``): unless the URL sets them, connections are opened with
/// `connect_timeout=10` (libpq waits without end otherwise) and TCP keepalives probing an
/// idle connection after 30 s, every 10 s, 3 times (``connectionDefaults``), so a connection
/// whose server vanished is found broken before it is lent out again.
public final class PostgresDriver: DatabaseDriver {
    public let dialect: SQLDialect = .postgres
    /// PostgreSQL connections are read-write; read-only work uses `BEGIN READ ONLY`.
    public let hasReadOnlyConnections = false

    private let url: String
    private let secrets: [String]
    /// Whether connections may keep state across transactions (see ``PostgresConnection``).
    public let keepsSessionState: Bool
    /// The name every connection gives the server (`application_name`) unless the URL or
    /// `PGAPPNAME` names one: printable ASCII, at most 63 bytes, so the server stores it
    /// unchanged and `pg_stat_activity` shows exactly this.
    public let applicationName: String
    /// How long past the statement timeout a wait for the server's answer may last before the
    /// connection is shut (``PostgresAnswerDeadline``); 0 for no limit.
    public let answerGraceMilliseconds: Int

    /// libpq's connection parameters Spout sets unless the URL sets them (a URL's own value, or
    /// its `PGCONNECT_TIMEOUT`-style environment variable, wins over these).
    static let connectionDefaults: [(keyword: String, value: String, environment: String?)] = [
        ("connect_timeout", "10", "PGCONNECT_TIMEOUT"),
        ("keepalives", "1", nil),
        ("keepalives_idle", "30", nil),
        ("keepalives_interval", "10", nil),
        ("keepalives_count", "3", nil),
    ]

    /// Creates a driver for `url`. Nothing is opened yet.
    /// - Parameters:
    ///   - preparedStatements: false for a transaction pooler (PgBouncer in
    ///     `pool_mode = transaction`): no named prepared statements and no session state.
    ///   - applicationName: the connections' `application_name`; nil for
    ///     ``defaultApplicationName``. Characters other than printable ASCII become `?` and
    ///     the name is cut to 63 bytes (PostgreSQL would otherwise escape or replace each
    ///     non-ASCII byte and cut the name itself).
    ///   - answerGraceMilliseconds: ``answerGraceMilliseconds``.
    /// - Throws: ``DatabaseError/Code/invalidURL`` unless the URL starts with `postgresql://`
    ///   or `postgres://`.
    public init(url: String, preparedStatements: Bool = true, applicationName: String? = nil, answerGraceMilliseconds: Int = 0) throws {
        guard url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") else {
            throw DatabaseError(.invalidURL, message: "expected a postgresql:// or postgres:// URL")
        }
        guard !url.utf8.contains(0) else {
            throw DatabaseError(.invalidURL, message: "the URL contains a NUL character")
        }
        self.url = url
        self.keepsSessionState = preparedStatements
        self.secrets = PostgresURLSecrets.passwords(in: url)
        self.applicationName = Self.serverName(applicationName ?? Self.defaultApplicationName)
        self.answerGraceMilliseconds = max(0, answerGraceMilliseconds)
    }

    /// `spout@HOST/PID`: this process among every other client of the server, including other
    /// Spout instances (the host name is a container's or a pod's own; the process id tells
    /// apart instances on one host). The host name is shortened so the whole fits in 63 bytes.
    public static let defaultApplicationName: String = {
        let suffix = "/\(getpid())"
        var buffer = [UInt8](repeating: 0, count: 256)
        let host =
            buffer.withUnsafeMutableBufferPointer { bytes in
                bytes.baseAddress!.withMemoryRebound(to: CChar.self, capacity: bytes.count) { gethostname($0, bytes.count - 1) }
            } == 0 ? String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self) : "unknown"
        let room = PostgresDriver.maximumNameBytes - "spout@".utf8.count - suffix.utf8.count
        return "spout@" + PostgresDriver.serverName(host).prefix(room) + suffix
    }()

    /// PostgreSQL keeps `NAMEDATALEN - 1` bytes of an application name.
    static let maximumNameBytes = 63

    /// `name` in a form the server stores unchanged: printable ASCII (any other character
    /// becomes one `?`), at most ``maximumNameBytes``.
    static func serverName(_ name: String) -> String {
        let ascii = name.unicodeScalars.map { (0x20...0x7E).contains($0.value) ? Character($0) : "?" }
        return String(ascii.prefix(Self.maximumNameBytes))
    }

    /// Opens a connection (blocking) and configures its session (UTF-8, ISO dates, UTC, ...).
    /// `readOnly` is ignored (see ``hasReadOnlyConnections``).
    /// - Throws: ``DatabaseError/Code/connectionFailed`` with libpq's message, password removed.
    public func connect(readOnly: Bool, statistics: QueryStatistics) throws -> any DatabaseConnection {
        guard let connection = self.open() else {
            throw DatabaseError(.connectionFailed, message: "libpq could not allocate a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = PostgresErrorMapping.message(PQerrorMessage(connection))
            PQfinish(connection)
            throw DatabaseError(.connectionFailed, message: self.redacted(message))
        }
        do {
            return try PostgresConnection(
                connection: connection, statistics: statistics, keepsSessionState: self.keepsSessionState,
                answerGraceMilliseconds: self.answerGraceMilliseconds)
        } catch var error as DatabaseError {
            error.code = .connectionFailed
            error.message = self.redacted(error.message)
            throw error
        }
    }

    /// `PQconnectdbParams` with ``connectionDefaults`` first (libpq lets later keywords win),
    /// then the URL expanded as `dbname`, then ``applicationName`` as the fallback name (a
    /// `fallback_application_name` in the URL is replaced; an `application_name` is not).
    private func open() -> OpaquePointer? {
        var pairs = Self.connectionDefaults.filter { $0.environment.map { getenv($0) == nil } ?? true }
            .map { ($0.keyword, $0.value) }
        pairs += [("dbname", self.url), ("fallback_application_name", self.applicationName)]
        // strdup'd copies, freed after the call: libpq reads them only while connecting.
        let keywords = pairs.map { strdup($0.0) } + [nil]
        let values = pairs.map { strdup($0.1) } + [nil]
        defer {
            keywords.forEach { free($0) }
            values.forEach { free($0) }
        }
        return PQconnectdbParams(keywords.map { UnsafePointer($0) }, values.map { UnsafePointer($0) }, 1)
    }

    /// `message` with every form of the password replaced by `***`.
    func redacted(_ message: String) -> String {
        var message = message
        for secret in self.secrets {
            message = message.replacing(secret, with: "***")
        }
        return message
    }
}

/// Finds the passwords in a libpq connection URL, for redaction.
enum PostgresURLSecrets {
    /// The password of the user-info part and of a `password=` query parameter, each both as
    /// written and percent-decoded; empty ones are left out.
    static func passwords(in url: String) -> [String] {
        var found: [String] = []
        guard let schemeEnd = url.firstRange(of: "://") else { return found }
        let rest = url[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
            found.append(String(authority[authority.index(after: colon)..<at]))
        }
        if let query = url.firstIndex(of: "?") {
            for pair in url[url.index(after: query)...].split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2 && parts[0] == "password" {
                    found.append(String(parts[1]))
                }
            }
        }
        var secrets: [String] = []
        for secret in found where !secret.isEmpty {
            secrets.append(secret)
            if let decoded = secret.removingPercentEncodingIfPossible, decoded != secret, !decoded.isEmpty {
                secrets.append(decoded)
            }
        }
        // Longest first, so a password that contains another is replaced whole.
        return secrets.sorted { $0.count > $1.count }
    }
}

extension String {
    /// Percent-decoded text (`%41` → `A`), or nil when the escapes are malformed or the
    /// result is not UTF-8. (Foundation-free.)
    fileprivate var removingPercentEncodingIfPossible: String? {
        var bytes: [UInt8] = []
        var iterator = Array(self.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next(), let low = iterator.next(),
                    let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
