import Foundation
import Logging
import SpoutCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What every instance serving one database must share: the keys page cursors are sealed with,
/// and the settings that must be equal (``SharedSetting``). One per served database.
///
/// Where the keys come from, first match:
/// 1. `cursorSecret` (the operator's): one key, id 0, on every instance that has the secret.
/// 2. The database's table `spout_keys` (``KeyTable``): read on first use, created with a
///    first key when missing, re-read when the keys in hand are older than
///    ``refreshInterval`` (and, at most once a second, when a cursor names a key id not in
///    hand: a key another instance just read). Every instance on the database, and every
///    restart, seals and opens with the same keys; rotation is ``KeyTable/rotate(on:now:keepOldSeconds:activationSeconds:)``
///    (`spout keys rotate`).
/// 3. When the database cannot keep them (read-only, a replica, a role that may not create
///    the table: ``KeyTable/lastingProblem(_:dialect:)``): a random key of this process,
///    with a warning that names `cursorSecret`. A failure that may pass (the database not
///    answering) is thrown to the request instead (503), and retried.
///
/// All database work goes through ``SpoutCore/Database/withSession(_:observer:retryOnPrimary:_:)``
/// on the primary: a read-only session to read, a read-write transaction to create or record.
/// Nothing here runs inside a request's own session (the keys are in hand before it starts).
public final class InstanceKeys: Sendable {
    /// Where the keys come from now.
    public enum Source: String, Sendable {
        case cursorSecret
        case database
        /// A key of this process only (the database could not keep one).
        case thisProcess = "this process"
        /// Not read yet (no paged request so far, or the database has not answered).
        case notRead = "not read yet"
    }

    /// What opens a cursor sealed with a given key id.
    public enum Opening: Sendable {
        case key(PageCursorKey)
        /// The key was there and has ended (``StoredKey/opensUntil``).
        case retired
        /// No such key here.
        case unknown
    }

    /// Keys in hand are used for sealing at most this long before they are read again.
    public static let refreshInterval: Duration = .seconds(60)

    let database: Database?
    let logger: Logger
    let operatorKey: PageCursorKey?
    /// Seconds since 1970 (tests give their own).
    let now: @Sendable () -> Int64
    /// `host/pid`: who recorded the shared settings.
    public let instance: String
    /// ``refreshInterval`` unless a test says otherwise.
    let refresh: Duration
    private let state = Mutex(State())

    private struct State {
        var keys: [StoredKey] = []
        var derived: [UInt32: PageCursorKey] = [:]
        var readAt: ContinuousClock.Instant?
        var failedAt: ContinuousClock.Instant?
        var unknownReloadAt: ContinuousClock.Instant?
        /// Set once the database turned out unable to keep keys.
        var processKey: PageCursorKey?
        var loading: Task<Void, any Error>?
        var settings: [SharedSetting] = []
        var differing: [String] = []
        var warned: Set<String> = []
        var settingsCheckedAt: ContinuousClock.Instant?
        var settingsChecking = false
    }

    /// - Parameters:
    ///   - cursorSecret: the operator's secret; empty: the database's keys.
    ///   - database: where the keys and the settings' fingerprints are kept; nil: nowhere (a
    ///     key of this process, without a warning: for tools that serve no clients).
    public init(
        cursorSecret: String, database: Database?, logger: Logger,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }, instance: String = InstanceKeys.defaultInstanceName,
        refreshInterval: Duration = InstanceKeys.refreshInterval
    ) {
        self.refresh = refreshInterval
        self.operatorKey = cursorSecret.isEmpty ? nil : PageCursorKey(secret: cursorSecret)
        self.database = database
        self.logger = logger
        self.now = now
        self.instance = instance
        if database == nil && cursorSecret.isEmpty {
            self.state.withLock { $0.processKey = PageCursorKey.random() }
        }
    }

    /// `host/pid` of this process.
    public static var defaultInstanceName: String {
        var name = [CChar](repeating: 0, count: 256)
        let host = gethostname(&name, name.count - 1) == 0
            ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown host"
        return "\(host)/\(getpid())"
    }

    public var source: Source {
        if self.operatorKey != nil { return .cursorSecret }
        return self.state.withLock { state in
            if state.processKey != nil { return .thisProcess }
            return state.readAt == nil ? .notRead : .database
        }
    }

    // MARK: Cursor keys

    /// The key to seal a cursor with now. Throws when the database's keys cannot be read and
    /// none are in hand (the database is not answering: a 503 for the request).
    public func sealingCursorKey() async throws -> PageCursorKey {
        if let key = self.operatorKey { return key }
        try await self.refreshIfStale()
        let now = self.now()
        if let key = self.state.withLock({ state in state.processKey ?? Self.sealing(&state, now: now) }) { return key }
        // Every key in hand has ended (the table changed by hand): read again, which adds one.
        try await self.reload()
        guard let key = self.state.withLock({ state in state.processKey ?? Self.sealing(&state, now: now) }) else {
            throw DatabaseError(.other, message: "spout_keys holds no key that opens now")
        }
        return key
    }

    /// The key to open a cursor sealed with key `id`.
    public func openingCursorKey(id: UInt32) async throws -> Opening {
        if let key = self.operatorKey { return id == key.id ? .key(key) : .unknown }
        if id == PageCursorKey.processOnlyID || id == PageCursorKey.operatorSecretID {
            return self.state.withLock { $0.processKey }.map { key -> Opening in id == key.id ? .key(key) : .unknown } ?? .unknown
        }
        try await self.refreshIfStale()
        let now = self.now()
        let found = self.state.withLock { state in Self.opening(&state, id: id, now: now) }
        guard case .unknown = found else { return found }
        // Perhaps a key another instance has just read: read again, at most once a second.
        let mayReload = self.state.withLock { state -> Bool in
            guard state.processKey == nil else { return false }
            if let last = state.unknownReloadAt, ContinuousClock.now - last < .seconds(1) { return false }
            state.unknownReloadAt = .now
            return true
        }
        guard mayReload else { return .unknown }
        try await self.reload()
        return self.state.withLock { state in Self.opening(&state, id: id, now: now) }
    }

    private static func sealing(_ state: inout State, now: Int64) -> PageCursorKey? {
        StoredKey.sealing(among: state.keys, at: now).map { self.derived(&state, $0) }
    }

    private static func opening(_ state: inout State, id: UInt32, now: Int64) -> Opening {
        guard let stored = state.keys.first(where: { $0.id == id }) else { return .unknown }
        guard stored.opens(at: now) else { return .retired }
        return .key(self.derived(&state, stored))
    }

    private static func derived(_ state: inout State, _ stored: StoredKey) -> PageCursorKey {
        if let key = state.derived[stored.id] { return key }
        let key = PageCursorKey(id: stored.id, master: stored.secret)
        state.derived[stored.id] = key
        return key
    }

    /// Reads the keys when none are in hand or they are older than ``refreshInterval``. A
    /// failure is thrown only when no key is in hand; with keys in hand they go on serving
    /// (they open for days after a rotation) and the read is tried again 5 s later at most.
    private func refreshIfStale() async throws {
        let (stale, held) = self.state.withLock { state -> (Bool, Bool) in
            if state.processKey != nil { return (false, true) }
            let held = !state.keys.isEmpty
            if held, let failed = state.failedAt, ContinuousClock.now - failed < .seconds(5) { return (false, true) }
            guard let read = state.readAt else { return (true, held) }
            return (ContinuousClock.now - read >= self.refresh, held)
        }
        guard stale else { return }
        do {
            try await self.reload()
        } catch {
            guard held else { throw error }
            self.logger.debug("page cursor keys: re-reading \(KeyTable.keysTable) failed; the keys in hand go on", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    /// Reads the keys (one read at a time: callers meanwhile wait for the same).
    private func reload() async throws {
        let task = self.state.withLock { state -> Task<Void, any Error> in
            if let running = state.loading { return running }
            let task = Task {
                defer { self.state.withLock { $0.loading = nil } }
                try await self.load()
            }
            state.loading = task
            return task
        }
        try await task.value
    }

    /// Reads `spout_keys` on a read-only session; when it is missing or holds no key that opens
    /// now, creates what is missing in a read-write transaction. A lasting problem switches to
    /// a key of this process, with a warning.
    private func load() async throws {
        guard let database = self.database else { return }
        let now = self.now()
        do {
            var keys = try await Self.readIfThere(database) { connection in try KeyTable.read(on: connection) }
            if keys.map({ StoredKey.sealing(among: $0, at: now) == nil }) ?? true {
                keys = try await database.withSession(Self.writeWork) { session in
                    try await session.run { connection in try KeyTable.ensure(on: connection, now: now) }
                }
            }
            let loaded = keys ?? []
            self.state.withLock { state in
                state.keys = loaded
                state.derived = state.derived.filter { id, _ in loaded.contains { $0.id == id } }
                state.readAt = .now
                state.failedAt = nil
            }
        } catch {
            if let problem = KeyTable.lastingProblem(error, dialect: database.dialect) {
                let first = self.state.withLock { state -> Bool in
                    defer { if state.processKey == nil { state.processKey = PageCursorKey.random() } }
                    return state.processKey == nil
                }
                if first {
                    self.logger.warning(
                        "page cursors: their key cannot be kept in the database (\(KeyTable.keysTable): \(problem)), so they are sealed with a key of this process only: another instance refuses them (400) and a restart ends them. Set cursorSecret (SPOUT_CURSOR_SECRET) to one long random value on every instance, or let this role create the table once (docs/configuration.md, \"Page cursor keys\")"
                    )
                }
                return
            }
            self.state.withLock { $0.failedAt = .now }
            throw error
        }
    }

    /// Runs `read` on a read-only session of the primary; nil when it reads nothing: a SQLite
    /// file that is not there yet, which a read-only connection cannot open (the read-write
    /// transaction that follows makes it).
    private static func readIfThere<T: Sendable>(
        _ database: Database, _ read: @escaping @Sendable (any DatabaseConnection) throws -> T?
    ) async throws -> T? {
        do {
            return try await database.withSession(DatabaseWork(readOnly: true)) { session in try await session.run(read) }
        } catch let error as DatabaseError where database.dialect == .sqlite && error.code == .connectionFailed {
            return nil
        }
    }

    /// A read-write transaction on the primary that a cancelled request does not cut short.
    static let writeWork = DatabaseWork(readOnly: false, transaction: .always(readOnly: false), cancelsWithTask: false)

    // MARK: Start

    /// What `spout serve` does once it listens, off the startup path: reads (or makes) the
    /// cursor keys when `pagedEndpoints`, logs where they come from, then compares `settings`
    /// with the fingerprints the last instance to start recorded, logs a warning for each that
    /// differs, and records this instance's.
    public func start(pagedEndpoints: Bool, settings: [SharedSetting]) async {
        if pagedEndpoints {
            if self.operatorKey != nil {
                self.logger.info("page cursors: sealed with cursorSecret, as on every instance that has the same")
            } else if self.database != nil {
                do {
                    let key = try await self.sealingCursorKey()
                    if self.source == .database {
                        self.logger.info(
                            "page cursors: sealed with key \(key.id) of \(KeyTable.keysTable), which every instance serving this database reads: a next link opens on any of them and after a restart"
                        )
                    }
                } catch {
                    self.logger.notice(
                        "page cursors: \(KeyTable.keysTable) could not be read yet (\(String(reflecting: error))); the first paged request reads it again")
                }
            }
        }
        await self.checkSharedSettings(settings, atStart: true)
    }

    // MARK: Shared settings

    /// The names of the shared settings that differed from another instance's at the last
    /// comparison; a comparison runs at start and again, at most once every
    /// ``refreshInterval``, when this is asked (`/ready`), in the background.
    public func differingSettings() -> [String] {
        let (differing, due) = self.state.withLock { state -> ([String], Bool) in
            let due = !state.settings.isEmpty && !state.settingsChecking
                && (state.settingsCheckedAt.map { ContinuousClock.now - $0 >= self.refresh } ?? false)
            if due { state.settingsChecking = true }
            return (state.differing, due)
        }
        if due {
            let settings = self.state.withLock { $0.settings }
            Task { await self.checkSharedSettings(settings, atStart: false) }
        }
        return differing
    }

    /// Compares `settings` with the recorded fingerprints and logs a warning for each that
    /// differs (at start, every one; later, each new difference once); at start, then records
    /// this instance's. A database that cannot be read or written is a notice at start.
    func checkSharedSettings(_ settings: [SharedSetting], atStart: Bool) async {
        guard let database = self.database, !settings.isEmpty else { return }
        defer { self.state.withLock { $0.settingsChecking = false; $0.settingsCheckedAt = .now } }
        self.state.withLock { $0.settings = settings }
        do {
            let recorded = try await Self.readIfThere(database) { connection in try KeyTable.readFingerprints(on: connection) } ?? []
            var differing: [String] = []
            var warnings: [String] = []
            for setting in settings {
                guard let other = recorded.first(where: { $0.name == setting.name }), other.recordedBy != self.instance else { continue }
                let comparison = setting.compare(with: other)
                guard let warning = setting.warning(comparison, recorded: other) else { continue }
                differing.append(setting.name)
                let new = self.state.withLock { state in state.warned.insert("\(setting.name) \(other.fingerprint)").inserted }
                if atStart || new { warnings.append(warning) }
            }
            self.state.withLock { $0.differing = differing }
            for warning in warnings { self.logger.warning("\(warning)") }
            if atStart {
                let (instance, now) = (self.instance, self.now())
                try await database.withSession(Self.writeWork) { session in
                    try await session.run { connection in try KeyTable.record(settings, by: instance, now: now, on: connection) }
                }
            }
        } catch {
            guard atStart else { return }
            let reason = KeyTable.lastingProblem(error, dialect: database.dialect) ?? String(reflecting: error)
            self.logger.notice(
                "settings every instance must share (cursorSecret, \(settings.dropFirst().first?.name ?? "the JWT secret"), identity.*) are not compared with other instances': \(KeyTable.settingsTable): \(reason)")
        }
    }
}
