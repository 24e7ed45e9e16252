import Foundation
import HTTPTypes

/// A local copy of a syncable endpoint's result for one caller (docs/client.md, Sync store):
/// an SQLite file that ``sync()`` brings up to date with a sync read
/// (`GET <path>?<query>&since=<cursor>`) and that answers offline and across app restarts.
///
/// ```swift
/// let store = try await client.syncStore(path: "/pets", query: [URLQueryItem(name: "owner", value: "Diane")], key: ["name"], directory: folder)
/// for try await snapshot in await store.snapshots() { show(try snapshot.decode(Pet.self)) }   // elsewhere
/// try await store.sync()
/// ```
///
/// Contract:
/// - The first sync stores the whole result (`since=0`); later ones apply the tombstones and
///   the changed rows, then keep the new cursor, all in one SQLite transaction: a sync cut
///   short (no network, a body truncated, the app killed) leaves the store as it was.
/// - `410 Gone` (the changes since the cursor are no longer kept) or a `400` naming `since`
///   (the cursor is not this caller's any more) syncs again from the beginning at once, and
///   the whole result replaces the store in one transaction.
/// - Rows are stored as the server's bytes, keyed by the `key` columns' values.
/// - One store per file: ``SpoutClient/syncStore(path:query:key:directory:account:)`` names
///   the file after the server, the path, the query and the caller's identity.
/// - The `sqlite3` handle is confined to a serial dispatch queue; callers await it and never
///   block a thread of Swift's cooperative pool on the file.
/// - Concurrent ``sync()`` calls share one sync read.
public actor SpoutSyncStore {
    /// The store's SQLite file.
    public nonisolated let fileURL: URL
    let client: SpoutClient
    let url: URL
    private let key: [String]
    let owner: LocalFileOwner
    private let file: SQLiteFile
    private var running: Task<SpoutSyncChanges, any Error>?
    private var observers: [UUID: Observer] = [:]

    private struct Observer {
        var continuation: AsyncThrowingStream<SpoutSyncSnapshot, any Error>.Continuation
        var generation: Int64
    }

    static let schema = """
        CREATE TABLE IF NOT EXISTS spout_sync_rows (
            position INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, json BLOB NOT NULL);
        CREATE TABLE IF NOT EXISTS spout_sync_state (
            id INTEGER PRIMARY KEY CHECK (id = 1), endpoint TEXT NOT NULL, cursor TEXT,
            synced_at REAL, generation INTEGER NOT NULL DEFAULT 0);
        """

    init(client: SpoutClient, url: URL, key: [String], owner: LocalFileOwner, file: SQLiteFile, endpoint: String) async throws {
        self.client = client
        self.url = url
        self.key = key
        self.owner = owner
        self.file = file
        self.fileURL = URL(fileURLWithPath: file.path)
        try await file.run { connection in
            try connection.query("INSERT OR IGNORE INTO spout_sync_state (id, endpoint) VALUES (1, ?)", [.text(endpoint)])
        }
    }

    /// The rows stored now; no network.
    public func snapshot() async throws -> SpoutSyncSnapshot {
        let dateFormat = self.client.configuration.dateFormat
        return try await self.file.run { connection in try Self.read(connection, dateFormat: dateFormat) }
    }

    /// The stored rows now, then again after each sync that changed the store, for as long as
    /// the sequence is iterated. A sequence that falls behind skips to the newest snapshot,
    /// never back to an older one. It ends with an error only if the file cannot be read.
    public func snapshots() -> AsyncThrowingStream<SpoutSyncSnapshot, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: SpoutSyncSnapshot.self, bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        continuation.onTermination = { _ in Task { await self.removeObserver(id) } }
        self.observers[id] = Observer(continuation: continuation, generation: -1)
        Task { await self.notifyObservers() }
        return stream
    }

    /// Brings the store up to date with the server and returns what changed. Throws what the
    /// request throws (``SpoutClientError/connectionFailed(_:)`` offline, ``SpoutClientError/server(_:)``
    /// for an error status); the store keeps its rows then. A sync already running is joined,
    /// not cancelled, when its caller is: others may be waiting for it.
    @discardableResult
    public func sync() async throws -> SpoutSyncChanges {
        if let running = self.running { return try await running.value }
        let task = Task { try await self.performSync() }
        self.running = task
        defer { self.running = nil }
        return try await task.value
    }

    private func performSync() async throws -> SpoutSyncChanges {
        let cursor = try await self.storedCursor()
        let changes: SpoutSyncChanges
        do {
            changes = try await self.syncRead(since: cursor)
        } catch SpoutClientError.server(let error) where cursor != nil && (error.status == 410 || (error.status == 400 && error.parameter == "since")) {
            changes = try await self.syncRead(since: nil)
        }
        await self.notifyObservers()
        return changes
    }

    /// The cursor of the last sync applied to the file; nil before the first.
    func storedCursor() async throws -> String? {
        try await self.file.run { connection in
            var cursor: String?
            try connection.query("SELECT cursor FROM spout_sync_state WHERE id = 1") { row in cursor = row.text(0) }
            return cursor
        }
    }

    /// The endpoint's URL with `since=cursor` added (`since=0` for nil: the whole result).
    nonisolated func url(since cursor: String?) throws -> URL {
        guard var components = URLComponents(url: self.url, resolvingAgainstBaseURL: false) else {
            throw SpoutClientError.invalidURL(self.url.absoluteString)
        }
        components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "since", value: cursor ?? "0")]
        guard let url = components.url else { throw SpoutClientError.invalidURL(self.url.absoluteString) }
        return url
    }

    /// One sync read from `since` (nil: the whole result), applied in one transaction.
    private func syncRead(since cursor: String?) async throws -> SpoutSyncChanges {
        var headers = try await self.client.headers(renewingToken: false)
        try self.owner.check(headers)
        headers[.accept] = "application/x-ndjson"
        let response = try await self.client.performAuthorized(TransportRequest(method: .get, url: try self.url(since: cursor), headers: headers))
        guard (200..<300).contains(response.status) else { throw SpoutClientError.server(await ErrorBodyDecoder.error(from: response)) }
        let delta = try await SyncDelta.read(response.body, key: self.key)
        let isWhole = cursor == nil
        let now = Date().timeIntervalSince1970
        try await self.file.transaction { connection in
            if isWhole { try connection.execute("DELETE FROM spout_sync_rows") }
            for key in delta.deleted { try connection.query("DELETE FROM spout_sync_rows WHERE key = ?", [.text(key)]) }
            for row in delta.rows {
                try connection.query(
                    "INSERT INTO spout_sync_rows (key, json) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET json = excluded.json",
                    [.text(row.key), .blob(row.json)])
            }
            try connection.query(
                "UPDATE spout_sync_state SET cursor = ?, synced_at = ?, generation = generation + 1 WHERE id = 1",
                [.text(delta.cursor), .real(now)])
        }
        return SpoutSyncChanges(isWhole: isWhole, upserted: delta.rows.map(\.key), deleted: isWhole ? [] : delta.deleted)
    }

    private func removeObserver(_ id: UUID) {
        self.observers[id] = nil
    }

    /// Reads the store and gives each observer the snapshot if it is newer than the last it got.
    private func notifyObservers() async {
        guard !self.observers.isEmpty else { return }
        let snapshot: SpoutSyncSnapshot
        do {
            snapshot = try await self.snapshot()
        } catch {
            for observer in self.observers.values { observer.continuation.finish(throwing: error) }
            self.observers = [:]
            return
        }
        for (id, observer) in self.observers where snapshot.generation > observer.generation {
            observer.continuation.yield(snapshot)
            self.observers[id]?.generation = snapshot.generation
        }
    }

    private static func read(_ connection: SQLiteFile.Connection, dateFormat: SpoutDateFormat) throws -> SpoutSyncSnapshot {
        var rows: [SpoutSyncedRow] = []
        try connection.query("SELECT key, json FROM spout_sync_rows ORDER BY position") { row in
            rows.append(SpoutSyncedRow(key: row.text(0) ?? "", json: Data(row.blob(1))))
        }
        var syncedAt: Date?
        var generation: Int64 = 0
        try connection.query("SELECT synced_at, generation FROM spout_sync_state WHERE id = 1") { row in
            syncedAt = row.isNull(0) ? nil : Date(timeIntervalSince1970: row.real(0))
            generation = row.integer(1)
        }
        return SpoutSyncSnapshot(rows: rows, syncedAt: syncedAt, generation: generation, dateFormat: dateFormat)
    }
}
