import CLibPQ
import SpoutCore

/// Opens libpq connections to one PostgreSQL database.
///
/// The URL (`postgresql://user:password@host:port/database?options`, or `postgres://...`)
/// is handed to libpq unchanged, so every libpq connection parameter works. The password is
/// never part of an error: messages are redacted before they leave the driver.
public final class PostgresDriver: DatabaseDriver {
    public let dialect: SQLDialect = .postgres
    /// PostgreSQL connections are read-write; read-only work uses `BEGIN READ ONLY`.
    public let hasReadOnlyConnections = false

    private let url: String
    private let secrets: [String]
    /// Whether connections may keep state across transactions (see ``PostgresConnection``).
    public let keepsSessionState: Bool

    /// Creates a driver for `url`. Nothing is opened yet.
    /// - Parameter preparedStatements: false for a transaction pooler (PgBouncer in
    ///   `pool_mode = transaction`): no named prepared statements and no session state.
    /// - Throws: ``DatabaseError/Code/invalidURL`` unless the URL starts with `postgresql://`
    ///   or `postgres://`.
    public init(url: String, preparedStatements: Bool = true) throws {
        guard url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") else {
            throw DatabaseError(.invalidURL, message: "expected a postgresql:// or postgres:// URL")
        }
        guard !url.utf8.contains(0) else {
            throw DatabaseError(.invalidURL, message: "the URL contains a NUL character")
        }
        self.url = url
        self.keepsSessionState = preparedStatements
        self.secrets = PostgresURLSecrets.passwords(in: url)
    }

    /// Opens a connection (blocking) and configures its session (UTF-8, ISO dates, UTC, ...).
    /// `readOnly` is ignored (see ``hasReadOnlyConnections``).
    /// - Throws: ``DatabaseError/Code/connectionFailed`` with libpq's message, password removed.
    public func connect(readOnly: Bool, statistics: QueryStatistics) throws -> any DatabaseConnection {
        guard let connection = PQconnectdb(self.url) else {
            throw DatabaseError(.connectionFailed, message: "libpq could not allocate a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = PostgresErrorMapping.message(PQerrorMessage(connection))
            PQfinish(connection)
            throw DatabaseError(.connectionFailed, message: self.redacted(message))
        }
        do {
            return try PostgresConnection(connection: connection, statistics: statistics, keepsSessionState: self.keepsSessionState)
        } catch var error as DatabaseError {
            error.code = .connectionFailed
            error.message = self.redacted(error.message)
            throw error
        }
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
