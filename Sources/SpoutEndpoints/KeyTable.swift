import Crypto
import Foundation
import SpoutCore

/// One key of the table `spout_keys` (``KeyTable``): what instances serving one database seal
/// page cursors with, so that a cursor one instance made opens on every other, and after a
/// restart.
///
/// Rules (``sealing(among:at:)``, ``opens(at:)``):
/// - A key opens (verifies) a cursor until its ``opensUntil`` (none: for ever).
/// - The key that seals is the one that opens now whose ``sealsFrom`` is the latest that has
///   come (ties: the higher id); when none has come yet (a clock behind the one that wrote the
///   table), the lowest id that opens.
/// - A rotation (``KeyTable/rotate(on:now:keepOldSeconds:activationSeconds:)``) adds a key that
///   seals from a little later (``KeyTable/activationSeconds``: every instance has re-read the
///   table by then) and ends the older keys a stated time after that (7 days by default), so a
///   cursor sealed just before the new key took over still opens for that time.
///
/// The secret never appears in a description or a dump.
public struct StoredKey: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// The key's id, carried by every cursor it seals (1, 2, …; 0 and `UInt32.max` are taken
    /// by ``PageCursorKey/operatorSecretID`` and ``PageCursorKey/processOnlyID``).
    public var id: UInt32
    /// 32 random bytes, from which each use derives its own key (``PageCursorKey/init(id:master:)``).
    var secret: [UInt8]
    /// Seconds since 1970 (the clock of the instance that made it).
    public var createdAt: Int64
    /// From when instances seal with it.
    public var sealsFrom: Int64
    /// Until when it opens what it sealed; nil: no end yet.
    public var opensUntil: Int64?

    public init(id: UInt32, secret: [UInt8], createdAt: Int64, sealsFrom: Int64, opensUntil: Int64? = nil) {
        self.id = id
        self.secret = secret
        self.createdAt = createdAt
        self.sealsFrom = sealsFrom
        self.opensUntil = opensUntil
    }

    /// Whether the key still opens cursors at `now`.
    public func opens(at now: Int64) -> Bool {
        self.opensUntil.map { now < $0 } ?? true
    }

    /// The key that seals at `now` among `keys` (see the type's rules); nil when none opens.
    public static func sealing(among keys: [StoredKey], at now: Int64) -> StoredKey? {
        let open = keys.filter { $0.opens(at: now) }
        let started = open.filter { $0.sealsFrom <= now }
        if let latest = started.max(by: { ($0.sealsFrom, $0.id) < ($1.sealsFrom, $1.id) }) { return latest }
        return open.min { $0.id < $1.id }
    }

    /// What a key does at `now` among `keys`, for `spout keys list`.
    public enum Status: String, Sendable {
        /// Seals new cursors (and opens them).
        case sealing
        /// Not sealing yet: it takes over at ``StoredKey/sealsFrom``.
        case next
        /// Opens cursors it sealed until ``StoredKey/opensUntil``; seals no more.
        case opening
        /// Opens nothing any more.
        case retired
    }

    public static func status(of key: StoredKey, among keys: [StoredKey], at now: Int64) -> Status {
        guard key.opens(at: now) else { return .retired }
        if Self.sealing(among: keys, at: now)?.id == key.id { return .sealing }
        return key.sealsFrom > now ? .next : .opening
    }

    public var description: String {
        "StoredKey(id: \(self.id), sealsFrom: \(self.sealsFrom), opensUntil: \(self.opensUntil.map(String.init) ?? "none"))"
    }

    public var customMirror: Mirror {
        Mirror(self, children: ["id": self.id, "createdAt": self.createdAt, "sealsFrom": self.sealsFrom, "opensUntil": self.opensUntil as Any])
    }
}

/// A fingerprint of a setting every instance on one database must have alike, as the table
/// `spout_shared_settings` holds it (``KeyTable``): the last instance to start records its own.
public struct RecordedFingerprint: Sendable, Hashable {
    /// The setting's row name (``SharedSetting/name``).
    public var name: String
    /// ``SharedSetting/fingerprint``: empty when that instance had the setting unset.
    public var fingerprint: String
    /// Seconds since 1970.
    public var recordedAt: Int64
    /// The instance: `host/pid`.
    public var recordedBy: String

    public init(name: String, fingerprint: String, recordedAt: Int64, recordedBy: String) {
        self.name = name
        self.fingerprint = fingerprint
        self.recordedAt = recordedAt
        self.recordedBy = recordedBy
    }
}

/// The two small tables Spout keeps in the database it serves, created the first time an
/// instance needs them (``ensure(on:now:)``), on PostgreSQL and SQLite alike:
///
/// ```sql
/// CREATE TABLE spout_keys (
///     id BIGINT PRIMARY KEY,          -- carried by every cursor the key seals
///     secret TEXT NOT NULL,           -- 64 hex digits: 32 random bytes
///     created_at BIGINT NOT NULL,     -- seconds since 1970
///     seals_from BIGINT NOT NULL,     -- instances seal with it from then on
///     opens_until BIGINT              -- it opens cursors until then; NULL: no end yet
/// );
/// CREATE TABLE spout_shared_settings (
///     name TEXT PRIMARY KEY,          -- cursorSecret, SPOUT_JWT_SECRET, identity.jwksUrl, …
///     fingerprint TEXT NOT NULL,      -- never the value itself (SharedSetting); '' for unset
///     recorded_at BIGINT NOT NULL,
///     recorded_by TEXT NOT NULL       -- host/pid of the instance that started last
/// );
/// ```
///
/// Contract:
/// - Every function runs on the connection it is given, in the caller's transaction; the
///   writing ones (``ensure(on:now:)``, ``rotate(on:now:keepOldSeconds:activationSeconds:)``,
///   ``record(_:by:now:on:)``) need a read-write transaction, which makes them all-or-nothing.
/// - Creation is race-free between processes: on PostgreSQL the writers take a transaction
///   advisory lock first (so two `CREATE TABLE IF NOT EXISTS` never meet), and the first key
///   is inserted `ON CONFLICT DO NOTHING` only when no key opens; SQLite's writers are already
///   one at a time (`BEGIN IMMEDIATE`, the busy timeout), two processes sharing one file included.
/// - The tables are created only when missing, so a role that may not create tables works once
///   they exist (made by another role, or by hand with the statements above).
public enum KeyTable {
    public static let keysTable = "spout_keys"
    public static let settingsTable = "spout_shared_settings"
    /// How long after a rotation the new key starts sealing: twice the time an instance may
    /// seal with keys read before (``InstanceKeys/refreshInterval``), so that every instance
    /// opens a cursor of the new key before any instance makes one.
    public static let activationSeconds: Int64 = 120
    /// How long the keys before a rotation keep opening cursors after the new key took over.
    public static let defaultKeepOldSeconds: Int64 = 7 * 86_400

    static let createKeys = """
        CREATE TABLE IF NOT EXISTS spout_keys (
            id BIGINT PRIMARY KEY,
            secret TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            seals_from BIGINT NOT NULL,
            opens_until BIGINT
        )
        """
    static let createSettings = """
        CREATE TABLE IF NOT EXISTS spout_shared_settings (
            name TEXT PRIMARY KEY,
            fingerprint TEXT NOT NULL,
            recorded_at BIGINT NOT NULL,
            recorded_by TEXT NOT NULL
        )
        """
    /// The lock that serializes the tables' writers (``lockAndCreate(on:)``; "spout" in ASCII).
    static let advisoryLock: Int64 = 0x73_70_6f_75_74

    // MARK: Reading

    /// Every key, by id; nil when the table is not there.
    public static func read(on connection: any DatabaseConnection) throws -> [StoredKey]? {
        guard try connection.tableExists(self.keysTable) else { return nil }
        let rows = try self.rows("SELECT id, secret, created_at, seals_from, opens_until FROM spout_keys ORDER BY id", [:], on: connection)
        return rows.compactMap { row in
            guard row.count == 5, case .integer(let number) = row[0], let id = UInt32(exactly: number), id != 0, id != .max,
                case .text(let hex) = row[1], let secret = Self.bytes(hex: hex), secret.count >= 16,
                case .integer(let created) = row[2], case .integer(let sealsFrom) = row[3]
            else { return nil }
            var opensUntil: Int64?
            if case .integer(let until) = row[4] { opensUntil = until }
            return StoredKey(id: id, secret: secret, createdAt: created, sealsFrom: sealsFrom, opensUntil: opensUntil)
        }
    }

    /// The recorded fingerprints; nil when the table is not there.
    public static func readFingerprints(on connection: any DatabaseConnection) throws -> [RecordedFingerprint]? {
        guard try connection.tableExists(self.settingsTable) else { return nil }
        let rows = try self.rows("SELECT name, fingerprint, recorded_at, recorded_by FROM spout_shared_settings ORDER BY name", [:], on: connection)
        return rows.compactMap { row in
            guard row.count == 4, case .text(let name) = row[0], case .text(let fingerprint) = row[1],
                case .integer(let at) = row[2], case .text(let by) = row[3]
            else { return nil }
            return RecordedFingerprint(name: name, fingerprint: fingerprint, recordedAt: at, recordedBy: by)
        }
    }

    // MARK: Writing

    /// Creates the tables when missing and, when no key opens at `now`, a new one that seals
    /// at once; returns every key. In a read-write transaction.
    public static func ensure(on connection: any DatabaseConnection, now: Int64) throws -> [StoredKey] {
        try self.lockAndCreate(on: connection)
        try self.execute(
            """
            INSERT INTO spout_keys (id, secret, created_at, seals_from)
            SELECT next.id, CAST(:secret AS TEXT), CAST(:now AS BIGINT), CAST(:now AS BIGINT)
            FROM (SELECT COALESCE(MAX(id), 0) + 1 AS id FROM spout_keys) AS next
            WHERE NOT EXISTS (SELECT 1 FROM spout_keys WHERE opens_until IS NULL OR opens_until > CAST(:now AS BIGINT))
            ON CONFLICT DO NOTHING
            """,
            ["secret": .text(Self.hex(Self.randomSecret())), "now": .integer(now)], on: connection)
        return try self.read(on: connection) ?? []
    }

    /// Adds a key that seals from `now + activationSeconds` (at once when no key opens now),
    /// ends every older key `keepOldSeconds` after that (a key that would end sooner keeps
    /// its end), and deletes the keys that ended before `now`. Creates the tables when missing.
    /// Returns the new key and every key after the change. In a read-write transaction.
    public static func rotate(
        on connection: any DatabaseConnection, now: Int64, keepOldSeconds: Int64 = Self.defaultKeepOldSeconds,
        activationSeconds: Int64 = Self.activationSeconds
    ) throws -> (added: StoredKey, keys: [StoredKey]) {
        try self.lockAndCreate(on: connection)
        let keys = try self.read(on: connection) ?? []
        let id = (keys.map(\.id).max() ?? 0) + 1
        guard id < UInt32.max else { throw DatabaseError(.invalidValue, message: "spout_keys: no key id left") }
        let sealsFrom = keys.contains { $0.opens(at: now) } ? now + max(0, activationSeconds) : now
        let until = sealsFrom + max(0, keepOldSeconds)
        try self.execute(
            """
            INSERT INTO spout_keys (id, secret, created_at, seals_from)
            VALUES (CAST(:id AS BIGINT), CAST(:secret AS TEXT), CAST(:now AS BIGINT), CAST(:sealsFrom AS BIGINT))
            """,
            ["id": .integer(Int64(id)), "secret": .text(Self.hex(Self.randomSecret())), "now": .integer(now), "sealsFrom": .integer(sealsFrom)],
            on: connection)
        try self.execute(
            """
            UPDATE spout_keys SET opens_until = CAST(:until AS BIGINT)
            WHERE id <> CAST(:id AS BIGINT) AND (opens_until IS NULL OR opens_until > CAST(:until AS BIGINT))
            """,
            ["id": .integer(Int64(id)), "until": .integer(until)], on: connection)
        try self.execute(
            "DELETE FROM spout_keys WHERE opens_until IS NOT NULL AND opens_until <= CAST(:now AS BIGINT)", ["now": .integer(now)],
            on: connection)
        let after = try self.read(on: connection) ?? []
        guard let added = after.first(where: { $0.id == id }) else {
            throw DatabaseError(.other, message: "spout_keys: the new key \(id) is not there after its insert")
        }
        return (added, after)
    }

    /// Records `settings` as this instance's (`by`), replacing what another instance recorded.
    /// Creates the tables when missing. In a read-write transaction.
    public static func record(_ settings: [SharedSetting], by: String, now: Int64, on connection: any DatabaseConnection) throws {
        try self.lockAndCreate(on: connection)
        for setting in settings {
            try self.execute(
                """
                INSERT INTO spout_shared_settings (name, fingerprint, recorded_at, recorded_by)
                VALUES (CAST(:name AS TEXT), CAST(:fingerprint AS TEXT), CAST(:now AS BIGINT), CAST(:by AS TEXT))
                ON CONFLICT (name) DO UPDATE SET
                    fingerprint = excluded.fingerprint, recorded_at = excluded.recorded_at, recorded_by = excluded.recorded_by
                """,
                ["name": .text(setting.name), "fingerprint": .text(setting.fingerprint), "now": .integer(now), "by": .text(by)],
                on: connection)
        }
    }

    /// Waits for the other instances' writers (``SpoutCore/DatabaseConnection/lockUntilTransactionEnds(_:)``);
    /// then creates each table that is missing.
    private static func lockAndCreate(on connection: any DatabaseConnection) throws {
        try connection.lockUntilTransactionEnds(self.advisoryLock)
        if try !connection.tableExists(self.keysTable) { try self.execute(self.createKeys, [:], on: connection) }
        if try !connection.tableExists(self.settingsTable) { try self.execute(self.createSettings, [:], on: connection) }
    }

    // MARK: Why the table cannot be used

    /// When `error` (from reading or writing the tables) means this database will not let
    /// this instance keep keys in it whatever it retries — a read-only database or replica, a
    /// role without the privilege — the reason in an operator's words; nil for a failure a
    /// later try may not meet (a connection lost, a lock, a timeout).
    public static func lastingProblem(_ error: any Error, dialect: SQLDialect) -> String? {
        guard let error = error as? DatabaseError else { return nil }
        if error.code == .readOnly {
            return "the database is read-only here (a replica, a read-only file or default_transaction_read_only)"
        }
        if error.sqlState == "42501" {
            return "this database role may not create or use them (\(error.message))"
        }
        if dialect == .sqlite, error.code == .connectionFailed {
            return "the database cannot be written (\(error.message))"
        }
        return nil
    }

    // MARK: Helpers

    /// `2025-01-31 12:00:00 UTC` for seconds since 1970: the tables' times, as logs and
    /// `spout keys` show them.
    public static func utc(_ seconds: Int64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss 'UTC'"
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    private static func rows(_ sql: String, _ arguments: [String: SQLValue], on connection: any DatabaseConnection) throws -> [[SQLValue]] {
        let parsed = try ParsedSQL.cached(sql, dialect: connection.dialect)
        let results = try connection.queryAll([BoundStatement(parsed, try parsed.bind(arguments))])
        return results.first?.rows ?? []
    }

    private static func execute(_ sql: String, _ arguments: [String: SQLValue], on connection: any DatabaseConnection) throws {
        let parsed = try ParsedSQL.cached(sql, dialect: connection.dialect)
        try connection.execute(parsed, try parsed.bind(arguments))
    }

    /// 32 bytes from the system's secure generator.
    static func randomSecret() -> [UInt8] {
        SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
    }

    static func hex(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.flatMap { [HexDigits.digit($0 >> 4), HexDigits.digit($0 & 0x0f)] }, as: UTF8.self)
    }

    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}
