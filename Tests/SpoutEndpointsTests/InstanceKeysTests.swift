import Foundation
import Logging
import SpoutCore
import SpoutDrivers
import SpoutTestDatabases
import SpoutTestSupport
import Synchronization
import Testing

@testable import SpoutEndpoints

/// The keys page cursors are sealed with when no `cursorSecret` is set: kept in the database
/// served (`spout_keys`), made once without a race, shared by every instance and restart,
/// rotated with a stated overlap (docs/configuration.md, "Page cursor keys").
@Suite("Instance keys")
struct InstanceKeysTests {
    static let day: Int64 = 86_400

    static func key(_ id: UInt32, sealsFrom: Int64, opensUntil: Int64? = nil) -> StoredKey {
        StoredKey(id: id, secret: Array(repeating: UInt8(id), count: 32), createdAt: sealsFrom, sealsFrom: sealsFrom, opensUntil: opensUntil)
    }

    /// A clock the test moves.
    final class Clock: Sendable {
        let seconds = Atomic<Int64>(1_700_000_000)
        var now: @Sendable () -> Int64 { { self.seconds.load(ordering: .relaxed) } }
        func advance(_ by: Int64) { self.seconds.wrappingAdd(by, ordering: .relaxed) }
    }

    static func logger(_ store: LogStore) -> Logger {
        Logger(label: "keys") { _ in RecordingLogHandler(store: store, logLevel: .debug) }
    }

    /// Runs `body` in a read-write transaction on a new connection to `url` (as `spout keys` does).
    static func inTransaction<T: Sendable>(_ url: String, _ body: @escaping @Sendable (any DatabaseConnection) throws -> T) async throws -> T {
        try await onThread {
            let database = try Drivers.open(url, configuration: DatabaseConfiguration(maximumConnections: 1))
            defer { database.close() }
            return try database.withConnection(readOnly: false) { connection in
                try connection.runRequest(statementTimeout: nil, transaction: .always(readOnly: false)) { try body(connection) }
            }
        }
    }

    // MARK: Rules

    @Test("the key that seals is the latest whose time has come; a rotated key opens until its end")
    func rules() {
        let now: Int64 = 1_000_000
        let first = Self.key(1, sealsFrom: now - Self.day, opensUntil: now + 120 + 7 * Self.day)
        let second = Self.key(2, sealsFrom: now + 120)
        // Before the new key's time: the old one seals, the new one already opens.
        #expect(StoredKey.sealing(among: [first, second], at: now)?.id == 1)
        #expect(StoredKey.status(of: second, among: [first, second], at: now) == .next)
        #expect(second.opens(at: now))
        // From its time on, the new one seals; the old one only opens, for 7 days.
        #expect(StoredKey.sealing(among: [first, second], at: now + 120)?.id == 2)
        #expect(StoredKey.status(of: first, among: [first, second], at: now + 120) == .opening)
        #expect(first.opens(at: now + 120 + 7 * Self.day - 1))
        #expect(!first.opens(at: now + 120 + 7 * Self.day))
        #expect(StoredKey.status(of: first, among: [first, second], at: now + 120 + 7 * Self.day) == .retired)
        // Ties go to the higher id; a clock behind every key's start still seals (lowest id).
        #expect(StoredKey.sealing(among: [Self.key(3, sealsFrom: now), Self.key(4, sealsFrom: now)], at: now)?.id == 4)
        #expect(StoredKey.sealing(among: [Self.key(5, sealsFrom: now + 10), Self.key(6, sealsFrom: now + 20)], at: now)?.id == 5)
        // A key that has ended never seals; nothing at all when every key has ended.
        #expect(StoredKey.sealing(among: [Self.key(7, sealsFrom: now + 5), Self.key(8, sealsFrom: now - 5, opensUntil: now)], at: now)?.id == 7)
        #expect(StoredKey.sealing(among: [Self.key(9, sealsFrom: 0, opensUntil: now)], at: now) == nil)
    }

    @Test("no secret in a description or a dump")
    func secretStaysOut() {
        let key = StoredKey(id: 3, secret: Array(repeating: 0xAB, count: 32), createdAt: 1, sealsFrom: 2)
        var dump = ""
        Swift.dump(key, to: &dump)
        for text in [key.description, String(reflecting: key), dump] {
            #expect(!text.contains("171"), "\(text)")
        }
    }

    @Test("cursors carry their key's id; another key, id or version does not open them")
    func cursorCarriesKeyID() throws {
        let context = PageCursor.context(endpoint: "GET /employees", arguments: [("lastName", .text("Haddad"))])
        let stored = Self.key(7, sealsFrom: 0)
        let key = PageCursorKey(id: 7, master: stored.secret)
        let text = PageCursor(values: [.integer(10_004)]).sealed(with: key, context: context)
        let sealed = try PageCursor.Sealed(text)
        #expect(sealed.keyID == 7)
        #expect(try sealed.open(with: key, context: context, keyCount: 1).values == [.integer(10_004)])
        // The same id over another secret, or the right key for another query: refused.
        #expect(throws: PageCursor.Refused.notValid) {
            try sealed.open(with: PageCursorKey(id: 7, master: Array(repeating: 1, count: 32)), context: context, keyCount: 1)
        }
        #expect(throws: PageCursor.Refused.notValid) {
            try sealed.open(with: key, context: PageCursor.context(endpoint: "GET /employees", arguments: []), keyCount: 1)
        }
        // The id is under the MAC: a cursor relabelled with another id does not open with that key.
        var bytes = try #require(PageCursor.bytes(base64URL: text))
        bytes[4] = 8
        let relabelled = try PageCursor.Sealed(PageCursor.base64URL(bytes))
        #expect(relabelled.keyID == 8)
        #expect(throws: PageCursor.Refused.notValid) {
            try relabelled.open(with: PageCursorKey(id: 8, master: stored.secret), context: context, keyCount: 1)
        }
        // Version 1 (before key ids) opens with the operator's secret it was sealed with.
        let secret = PageCursorKey(secret: "an operator's secret")
        var legacy: [UInt8] = [1, UInt8(ascii: "i")]
        withUnsafeBytes(of: Int64(10_004).bigEndian) { legacy.append(contentsOf: $0) }
        legacy += secret.authenticationCode(for: context + legacy)
        let old = try PageCursor.Sealed(PageCursor.base64URL(legacy))
        #expect(old.keyID == PageCursorKey.operatorSecretID)
        #expect(try old.open(with: secret, context: context, keyCount: 1).values == [.integer(10_004)])
    }

    // MARK: The table

    @Test("the table is made once with one key, however many instances start at once", arguments: SQLDialect.allCases)
    func madeOnceWithoutARace(_ dialect: SQLDialect) async throws {
        guard let database = try TestDatabases.make(dialect, prefix: "spout_t_keys") else { return }
        defer { database.drop() }
        let url = database.url
        // Six "instances" (a pool each, so separate connections: for SQLite, as two processes
        // sharing the file are) create the table and the first key at the same moment.
        let results = try await withThrowingTaskGroup(of: [StoredKey].self) { group in
            for _ in 0..<6 {
                group.addTask { try await Self.inTransaction(url) { try KeyTable.ensure(on: $0, now: 1_000) } }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for keys in results {
            #expect(keys.map(\.id) == [1], "\(keys)")
            #expect(keys.first?.secret == results[0].first?.secret)
            #expect(keys.first?.secret.count == 32)
        }
        // Read again later: the same key, not a new one.
        let again = try await Self.inTransaction(url) { try KeyTable.ensure(on: $0, now: 5_000) }
        #expect(again == results[0])
        let read = try await Self.inTransaction(url) { try KeyTable.read(on: $0) }
        #expect(read == results[0])
    }

    @Test("a rotation adds a key that seals 2 minutes later, ends the old ones after the overlap and deletes ended ones", arguments: SQLDialect.allCases)
    func rotation(_ dialect: SQLDialect) async throws {
        guard let database = try TestDatabases.make(dialect, prefix: "spout_t_keys") else { return }
        defer { database.drop() }
        let url = database.url
        let start: Int64 = 1_000_000
        // A rotation on a database without the table makes it: key 1, sealing at once.
        let (first, _) = try await Self.inTransaction(url) { try KeyTable.rotate(on: $0, now: start, keepOldSeconds: Self.day) }
        #expect(first.id == 1 && first.sealsFrom == start && first.opensUntil == nil)

        let (second, keys) = try await Self.inTransaction(url) { try KeyTable.rotate(on: $0, now: start + 10, keepOldSeconds: Self.day) }
        #expect(second.id == 2 && second.sealsFrom == start + 10 + KeyTable.activationSeconds && second.opensUntil == nil)
        #expect(keys.first { $0.id == 1 }?.opensUntil == second.sealsFrom + Self.day)
        #expect(StoredKey.sealing(among: keys, at: start + 10)?.id == 1)
        #expect(StoredKey.sealing(among: keys, at: second.sealsFrom)?.id == 2)

        // A rotation with no overlap (a leak) ends key 2 as soon as key 3 seals, and never
        // lengthens key 1's end.
        let (third, after) = try await Self.inTransaction(url) { try KeyTable.rotate(on: $0, now: start + 20, keepOldSeconds: 0) }
        #expect(third.id == 3)
        #expect(after.first { $0.id == 2 }?.opensUntil == third.sealsFrom)
        #expect(after.first { $0.id == 1 }?.opensUntil == min(second.sealsFrom + Self.day, third.sealsFrom))

        // Once ended, keys are deleted by the next rotation; ids keep counting up.
        let (fourth, remaining) = try await Self.inTransaction(url) { try KeyTable.rotate(on: $0, now: start + 2 * Self.day, keepOldSeconds: Self.day) }
        #expect(fourth.id == 4)
        #expect(remaining.map(\.id) == [3, 4])
    }

    @Test("spout keys rotate and spout keys list: ids, what each does and when, never a secret")
    func keysCommand() async throws {
        let temporary = TestDatabases.makeSQLiteDatabase()
        defer { temporary.drop() }
        let spout = try ChildProcess.spoutExecutable()
        func keys(_ arguments: [String]) async throws -> String {
            // No SPOUT_* setting of the test's environment (a cursorSecret, another database).
            let result = try await ChildProcess.run(
                executable: spout, arguments: ["keys"] + arguments + ["--database", temporary.url],
                environment: ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SPOUT_") })
            try #require(result.status == 0, "spout keys \(arguments): \(result.standardError)")
            return result.standardOutput
        }
        #expect(try await keys(["list"]).contains("no keys yet"))
        #expect(try await keys(["rotate"]).hasPrefix("added key 1: it seals page cursors from "))
        let second = try await keys(["rotate", "--keep-old-hours", "1"])
        #expect(second.hasPrefix("added key 2: it seals page cursors from "), "\(second)")
        #expect(second.contains("key 1 opens the cursors it sealed until "), "\(second)")
        let list = try await keys([])
        let lines = list.split(separator: "\n").map { $0.split(separator: " ").prefix(2).joined(separator: " ") }
        #expect(lines == ["id status", "1 sealing", "2 next"], "\(list)")
        let stored = try await Self.inTransaction(temporary.url) { try KeyTable.read(on: $0) } ?? []
        for key in stored {
            #expect(!list.contains(KeyTable.hex(key.secret)) && !second.contains(KeyTable.hex(key.secret)))
        }
    }

    // MARK: Instances

    @Test("two instances and a restart seal and open with the same key; a rotation reaches all of them", arguments: SQLDialect.allCases)
    func instancesAgree(_ dialect: SQLDialect) async throws {
        guard let temporary = try TestDatabases.make(dialect, prefix: "spout_t_keys") else { return }
        defer { temporary.drop() }
        let clock = Clock()
        let logs = LogStore()
        let first = try temporary.open()
        let second = try temporary.open()
        defer { first.close(); second.close() }
        let one = InstanceKeys(
            cursorSecret: "", database: first, logger: Self.logger(logs), now: clock.now, instance: "one/1", refreshInterval: .milliseconds(500))
        let two = InstanceKeys(cursorSecret: "", database: second, logger: Self.logger(logs), now: clock.now, instance: "two/2")
        #expect(one.source == .notRead)

        let sealing = try await one.sealingCursorKey()
        #expect(sealing.id == 1 && one.source == .database)
        guard case .key(let opened) = try await two.openingCursorKey(id: 1) else { Issue.record("instance two has no key 1"); return }
        let context = PageCursor.context(endpoint: "GET /employees", arguments: [])
        let cursor = PageCursor(values: [.integer(5)]).sealed(with: sealing, context: context)
        #expect(try PageCursor.open(cursor, with: opened, context: context, keyCount: 1).values == [.integer(5)])
        // A restart: a new InstanceKeys on the same database.
        let restarted = InstanceKeys(cursorSecret: "", database: second, logger: Self.logger(logs), now: clock.now)
        guard case .key(let afterRestart) = try await restarted.openingCursorKey(id: 1) else { Issue.record("no key 1 after a restart"); return }
        #expect(try PageCursor.open(cursor, with: afterRestart, context: context, keyCount: 1).values == [.integer(5)])

        // A rotation (spout keys rotate) at the test clock's time.
        let rotatedAt = clock.now()
        let (added, _) = try await Self.inTransaction(temporary.url) { try KeyTable.rotate(on: $0, now: rotatedAt, keepOldSeconds: Self.day) }
        #expect(added.id == 2)
        // Instance two has read its keys just now: a cursor naming key 2 reads them again.
        guard case .key = try await two.openingCursorKey(id: 2) else { Issue.record("an unknown id did not re-read the keys"); return }
        // Instance one seals with key 1 until key 2's time, then (having re-read: its keys in
        // hand are older than its refresh interval) with key 2.
        #expect(try await one.sealingCursorKey().id == 1)
        clock.advance(KeyTable.activationSeconds)
        try await Task.sleep(for: .milliseconds(600))
        #expect(try await one.sealingCursorKey().id == 2)
        // Key 1 opens for a day after key 2 took over, then no more: a clear 400 reason.
        clock.advance(Self.day - 1)
        guard case .key = try await two.openingCursorKey(id: 1) else { Issue.record("key 1 ended early"); return }
        clock.advance(1)
        guard case .retired = try await two.openingCursorKey(id: 1) else { Issue.record("key 1 did not end"); return }
        guard case .unknown = try await two.openingCursorKey(id: 99) else { Issue.record("key 99 is not there"); return }
        #expect(!logs.all.contains { $0.level >= .warning }, "\(logs.all.map(\.message))")
    }

    @Test("the operator's cursorSecret wins: id 0, no table read")
    func operatorSecretWins() async throws {
        let temporary = TestDatabases.makeSQLiteDatabase()
        defer { temporary.drop() }
        let database = try temporary.open()
        defer { database.close() }
        let logs = LogStore()
        let keys = InstanceKeys(cursorSecret: "s3cret-of-the-operator", database: database, logger: Self.logger(logs))
        let key = try await keys.sealingCursorKey()
        #expect(key.id == PageCursorKey.operatorSecretID && keys.source == .cursorSecret)
        guard case .unknown = try await keys.openingCursorKey(id: 1) else { Issue.record("a database key opened"); return }
        let read = try await Self.inTransaction(temporary.url) { try KeyTable.read(on: $0) }
        #expect(read == nil, "the table was made though cursorSecret is set")
    }

    @Test("a role that may not create the table: a key of this process, and a warning that names cursorSecret; once the table exists, its keys",
          .enabled(if: TestDatabases.postgresEnabled))
    func roleWithoutCreate() async throws {
        let temporary = try TestDatabases.makePostgresDatabase(prefix: "spout_t_keys")
        defer { temporary.drop() }
        let role = "spout_t_reader_\(UInt32.random(in: 0 ... .max))"
        try await Self.inTransaction(temporary.url) { connection in
            // PostgreSQL 15 on: a role that does not own the database may not create in public.
            try connection.executeScript("CREATE ROLE \(role) LOGIN; REVOKE CREATE ON SCHEMA public FROM PUBLIC; GRANT USAGE ON SCHEMA public TO \(role)")
        }
        // Runs before the database is dropped (defers run last first): the role's grants are there.
        defer {
            if let owner = try? Drivers.driver(for: temporary.url).connect(readOnly: false, statistics: QueryStatistics()) {
                try? owner.executeScript("DROP OWNED BY \(role) CASCADE; DROP ROLE IF EXISTS \(role)")
                owner.close()
            }
        }
        guard var components = URLComponents(string: temporary.url) else { Issue.record("no URL"); return }
        components.user = role
        let readerURL = try #require(components.string)

        let logs = LogStore()
        let reader = try Drivers.open(readerURL)
        defer { reader.close() }
        let keys = InstanceKeys(cursorSecret: "", database: reader, logger: Self.logger(logs))
        let key = try await keys.sealingCursorKey()
        #expect(key.id == PageCursorKey.processOnlyID && keys.source == .thisProcess)
        let warnings = logs.all.filter { $0.level == .warning }.map(\.message)
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("cursorSecret (SPOUT_CURSOR_SECRET)") == true && warnings.first?.contains("may not create") == true, "\(warnings)")
        _ = try await keys.sealingCursorKey()
        #expect(logs.all.filter { $0.level == .warning }.count == 1, "warned once")

        // The owner makes the table (a first spout serve, or by hand) and lets the role read it.
        let made = try await Self.inTransaction(temporary.url) { connection in
            let keys = try KeyTable.ensure(on: connection, now: Int64(Date().timeIntervalSince1970))
            try connection.executeScript("GRANT SELECT ON spout_keys, spout_shared_settings TO \(role)")
            return keys
        }
        let later = InstanceKeys(cursorSecret: "", database: reader, logger: Self.logger(logs))
        #expect(try await later.sealingCursorKey().id == made[0].id)
        #expect(later.source == .database)
    }

    @Test("a read-only database or a role without the privilege is lasting; a lost connection is not")
    func lastingProblems() {
        #expect(KeyTable.lastingProblem(DatabaseError(.readOnly, sqlState: "25006"), dialect: .postgres)?.contains("read-only") == true)
        #expect(KeyTable.lastingProblem(DatabaseError(.invalidSQL, message: "permission denied for schema public", sqlState: "42501"), dialect: .postgres)?
            .contains("permission denied for schema public") == true)
        #expect(KeyTable.lastingProblem(DatabaseError(.readOnly), dialect: .sqlite) != nil)
        #expect(KeyTable.lastingProblem(DatabaseError(.connectionFailed, message: "cannot open"), dialect: .sqlite) != nil)
        #expect(KeyTable.lastingProblem(DatabaseError(.connectionFailed), dialect: .postgres) == nil)
        #expect(KeyTable.lastingProblem(DatabaseError(.connectionLost), dialect: .postgres) == nil)
        #expect(KeyTable.lastingProblem(DatabaseError(.busy), dialect: .sqlite) == nil)
        #expect(KeyTable.lastingProblem(DatabaseError(.statementTimeout), dialect: .postgres) == nil)
    }

    // MARK: Shared settings

    @Test("fingerprints: equal values alike, never the value, unset empty")
    func fingerprints() {
        let one = SharedSetting(name: "SPOUT_JWT_SECRET", value: "a-long-random-secret-0123456789abcdef", consequence: "")
        let same = SharedSetting(name: "SPOUT_JWT_SECRET", value: "a-long-random-secret-0123456789abcdef", consequence: "")
        let other = SharedSetting(name: "SPOUT_JWT_SECRET", value: "another-long-random-secret-0123456789", consequence: "")
        let unset = SharedSetting(name: "SPOUT_JWT_SECRET", value: "", consequence: "")
        #expect(one.fingerprint == same.fingerprint && one.fingerprint.count == 32)
        #expect(one.fingerprint != other.fingerprint && !one.fingerprint.contains("secret"))
        #expect(unset.fingerprint.isEmpty)
        // The same value under another name has another fingerprint.
        #expect(SharedSetting(name: "cursorSecret", value: "a-long-random-secret-0123456789abcdef", consequence: "").fingerprint != one.fingerprint)
        func recorded(_ setting: SharedSetting) -> RecordedFingerprint {
            RecordedFingerprint(name: setting.name, fingerprint: setting.fingerprint, recordedAt: 0, recordedBy: "b/2")
        }
        #expect(one.compare(with: recorded(same)) == .same)
        #expect(one.compare(with: recorded(other)) == .differs)
        #expect(unset.compare(with: recorded(one)) == .unsetHere)
        #expect(one.compare(with: recorded(unset)) == .unsetThere)
        #expect(unset.compare(with: recorded(unset)) == .same)
        let warning = one.warning(.differs, recorded: recorded(other)) ?? ""
        #expect(warning.contains("SPOUT_JWT_SECRET here differs from the one instance b/2 (started 1970-01-01 00:00:00 UTC) has"), "\(warning)")
    }

    @Test("an instance that starts with another JWT secret or cursorSecret says so, and /ready lists it", arguments: SQLDialect.allCases)
    func differingSettingsAreLogged(_ dialect: SQLDialect) async throws {
        guard let temporary = try TestDatabases.make(dialect, prefix: "spout_t_keys") else { return }
        defer { temporary.drop() }
        let database = try temporary.open()
        defer { database.close() }
        var configuration = SpoutConfiguration()
        let secret = "first-secret-0123456789abcdef0123456789"
        let firstLogs = LogStore()
        let first = InstanceKeys(cursorSecret: "", database: database, logger: Self.logger(firstLogs), instance: "host-a/1")
        await first.start(pagedEndpoints: true, settings: SharedSetting.of(configuration, environment: ["SPOUT_JWT_SECRET": secret]))
        #expect(firstLogs.all.contains { $0.message.contains("sealed with key 1 of spout_keys") })
        #expect(!firstLogs.all.contains { $0.level >= .notice }, "\(firstLogs.all.map(\.message))")

        // The same settings: nothing to say.
        let sameLogs = LogStore()
        let same = InstanceKeys(cursorSecret: "", database: database, logger: Self.logger(sameLogs), instance: "host-b/2")
        await same.start(pagedEndpoints: true, settings: SharedSetting.of(configuration, environment: ["SPOUT_JWT_SECRET": secret]))
        #expect(!sameLogs.all.contains { $0.level >= .notice }, "\(sameLogs.all.map(\.message))")
        #expect(same.differingSettings().isEmpty)

        // Another JWT secret and a cursorSecret: two warnings, neither with a value.
        configuration.cursorSecret = "the-cursor-secret-of-c"
        let otherLogs = LogStore()
        let other = InstanceKeys(cursorSecret: configuration.cursorSecret, database: database, logger: Self.logger(otherLogs), instance: "host-c/3")
        await other.start(pagedEndpoints: true, settings: SharedSetting.of(configuration, environment: ["SPOUT_JWT_SECRET": secret + "x"]))
        let warnings = otherLogs.all.filter { $0.level == .warning }.map(\.message)
        #expect(warnings.count == 2, "\(warnings)")
        #expect(warnings.contains { $0.hasPrefix("SPOUT_JWT_SECRET here differs from the one instance host-b/2") && $0.contains("(401)") })
        #expect(warnings.contains { $0.hasPrefix("cursorSecret is set here, but instance host-b/2") && $0.contains("(400)") })
        #expect(!warnings.joined().contains(secret) && !warnings.joined().contains("the-cursor-secret-of-c"))
        #expect(other.differingSettings() == ["cursorSecret", "SPOUT_JWT_SECRET"])

        // Instance c recorded its own: instance b, asking again, now finds them different.
        await same.checkSharedSettings(SharedSetting.of(SpoutConfiguration(), environment: ["SPOUT_JWT_SECRET": secret]), atStart: false)
        #expect(same.differingSettings() == ["cursorSecret", "SPOUT_JWT_SECRET"])
        #expect(sameLogs.all.filter { $0.level == .warning }.count == 2)
        await same.checkSharedSettings(SharedSetting.of(SpoutConfiguration(), environment: ["SPOUT_JWT_SECRET": secret]), atStart: false)
        #expect(sameLogs.all.filter { $0.level == .warning }.count == 2, "each difference is logged once")
    }
}
