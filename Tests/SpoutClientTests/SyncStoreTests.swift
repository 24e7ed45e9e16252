import Foundation
import HTTPTypes
import SpoutClient
import SpoutCore
import SpoutDrivers
import SpoutTestDatabases
import SpoutTestSupport
import Synchronization
import Testing

/// ``SpoutSyncStore`` against a real `spout serve` of the pets (docs/client.md, Sync store), on
/// SQLite and on PostgreSQL: the first sync, a delta with a tombstone, offline answers, a
/// restart, two identities on one device, and a sync again from the beginning after `410`.
@Suite("Sync store")
struct SyncStoreTests {
    /// A row of `GET /pets`.
    struct Pet: Decodable, Equatable {
        var name: String
        var species: String?
    }

    /// Diane's pets with their events: the store's endpoint and query.
    static let dianes = [URLQueryItem(name: "owner", value: "Diane"), URLQueryItem(name: "details", value: "events")]

    /// A pets server on `dialect` (nil when PostgreSQL is not there), with the URL of the
    /// database it serves; `extraFiles` and `endpoints` (`SPOUT_ENDPOINTS`) add endpoints. The
    /// server is not stopped here when `body` stopped it already.
    static func withPets(
        _ dialect: SQLDialect, extraFiles: [String: String] = [:], endpoints: String = "endpoints/pets.yaml",
        _ body: (LiveSpout, String) async throws -> Void
    ) async throws {
        switch dialect {
        case .sqlite:
            let server = try await LiveSpout.start(extraFiles: extraFiles, environment: ["SPOUT_ENDPOINTS": endpoints])
            try await Self.run(server, database: server.seededDatabaseURL, body)
        case .postgres:
            guard TestDatabases.postgresEnabled else { return }
            let database = try await onThread { try TestDatabases.makePostgresDatabase(prefix: "spout_client_sync") }
            defer { database.drop() }
            let load = try await ChildProcess.run(
                executable: try ChildProcess.spoutExecutable(),
                arguments: ["load-pets", "--database", database.url, "--sql-directory", TestFixtures.repositoryRoot.appendingPathComponent("sql").path])
            #expect(load.status == 0, "\(load.standardError)")
            let server = try await LiveSpout.start(
                extraFiles: extraFiles, environment: ["SPOUT_ENDPOINTS": endpoints], extraArguments: ["--database", database.url])
            try await Self.run(server, database: database.url, body)
        }
    }

    private static func run(_ server: LiveSpout, database: String, _ body: (LiveSpout, String) async throws -> Void) async throws {
        do {
            try await body(server, database)
            await server.stop()
        } catch {
            await server.stop()
            throw error
        }
    }

    static func makeDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("spout-sync-store-\(UUID().uuidString)")
    }

    /// The rows of the ordinary read of `query`, each line's bytes as the server wrote it.
    static func ordinaryRows(_ client: SpoutClient, query: [URLQueryItem] = Self.dianes) async throws -> Set<Data> {
        let body = try await client.bytes(path: "/pets", query: query, accept: "application/x-ndjson").value
        return Set(body.split(separator: UInt8(ascii: "\n")).map { Data($0) })
    }

    /// A client whose every request carries a token of `sub`.
    static func client(_ server: LiveSpout, sub: String) async throws -> SpoutClient {
        server.client(SpoutClientConfiguration(headers: try await LiveSpout.authorization(sub: sub)))
    }

    @Test("the first sync stores the whole result; a delta applies a change by another client and a tombstone", arguments: SQLDialect.allCases)
    func firstSyncThenDelta(_ dialect: SQLDialect) async throws {
        let directory = Self.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Self.withPets(dialect) { server, _ in
            let diane = try await Self.client(server, sub: "Diane")
            let store = try await diane.syncStore(path: "/pets", query: Self.dianes, key: ["name"], directory: directory)
            let empty = try await store.snapshot()
            #expect(empty.rows.isEmpty && empty.syncedAt == nil)

            let first = try await store.sync()
            #expect(first.isWhole && first.deleted.isEmpty)
            let stored = try await store.snapshot()
            #expect(Set(stored.rows.map(\.json)) == (try await Self.ordinaryRows(diane)))
            #expect(try stored.decode(Pet.self).map(\.name) == ["Bowser", "Puffball"])
            #expect(stored.syncedAt != nil)

            // Another client of Diane's: a new pet, a change, a pet given away.
            let other = try await Self.client(server, sub: "Diane")
            let form = { (fields: [(String, String)]) in SpoutRequestBody.form(fields.map { URLQueryItem(name: $0.0, value: $0.1) }) }
            _ = try await other.send(.post, path: "/pets", body: form([("name", "Rex"), ("species", "dog")]))
            _ = try await other.send(.post, path: "/pets/Bowser", body: form([("species", "wolf")]))
            _ = try await other.send(.post, path: "/pets/Puffball", body: form([("owner", "Gwen")]))

            // On PostgreSQL a delta may repeat changes of transactions that were still open
            // elsewhere in the cluster when the cursor was made ("some rows come twice"):
            // what it must hold, and the store it makes, are exact.
            let delta = try await store.sync()
            #expect(!delta.isWhole)
            #expect(delta.deleted.contains(#"["Puffball"]"#))
            #expect(Set(delta.upserted).isSuperset(of: [#"["Bowser"]"#, #"["Rex"]"#]))
            let after = try await store.snapshot()
            #expect(Set(after.rows.map(\.json)) == (try await Self.ordinaryRows(diane)))
            #expect(try after.decode(Pet.self).map(\.name) == ["Bowser", "Rex"])
            #expect(try after.decode(Pet.self).first?.species == "wolf")
            // Nothing changed since: the same rows.
            #expect(try await store.sync().isWhole == false)
            #expect(try await store.snapshot().rows == after.rows)
        }
    }

    @Test("offline, the store answers; a new client instance opens the same file and answers the same rows", arguments: SQLDialect.allCases)
    func offlineAndRestart(_ dialect: SQLDialect) async throws {
        let directory = Self.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let token = try await LiveSpout.token(sub: "Diane")
        let configuration = SpoutClientConfiguration(
            headers: [.authorization: "Bearer " + token], retry: SpoutRetryPolicy(maximumAttempts: 1))
        try await Self.withPets(dialect) { server, _ in
            let store = try await server.client(configuration).syncStore(path: "/pets", query: Self.dianes, key: ["name"], directory: directory)
            try await store.sync()
            let online = try await store.snapshot()
            #expect(online.rows.count == 2)

            await server.stop()
            await #expect(throws: SpoutClientError.self) { try await store.sync() }
            #expect(try await store.snapshot().rows == online.rows)

            // The app restarts: a new client, a new store instance on the same file, offline.
            let restarted = try await SpoutClient(baseURL: server.baseURL, configuration: configuration)
                .syncStore(path: "/pets", query: Self.dianes, key: ["name"], directory: directory)
            #expect(restarted.fileURL == store.fileURL)
            var snapshots = await restarted.snapshots().makeAsyncIterator()
            let first = try await snapshots.next()
            #expect(first?.rows == online.rows)
            #expect(first?.syncedAt == online.syncedAt)
        }
    }

    @Test("two identities on one device keep two stores; credentials of another identity are refused", arguments: SQLDialect.allCases)
    func identitiesApart(_ dialect: SQLDialect) async throws {
        let directory = Self.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Self.withPets(dialect) { server, _ in
            let diane = try await Self.client(server, sub: "Diane")
            let gwen = try await Self.client(server, sub: "Gwen")
            let dianes = try await diane.syncStore(path: "/pets", query: Self.dianes, key: ["name"], directory: directory)
            let gwens = try await gwen.syncStore(path: "/pets", query: Self.dianes, key: ["name"], directory: directory)
            #expect(dianes.fileURL != gwens.fileURL)
            try await dianes.sync()
            #expect(try await dianes.snapshot().rows.count == 2)
            // Gwen's store holds nothing of Diane's sync, and its first sync is its own (Diane's
            // cursor would be a 400 for Gwen).
            #expect(try await gwens.snapshot().rows.isEmpty)
            #expect(try await gwens.sync().isWhole)
            #expect(try await dianes.sync().isWhole == false)

            // An app's own account ids key the stores instead of the token.
            let first = try await diane.syncStore(path: "/pets", query: Self.dianes, key: ["name"], directory: directory, account: "a1")
            let second = try await diane.syncStore(path: "/pets", query: Self.dianes, key: ["name"], directory: directory, account: "a2")
            #expect(Set([first.fileURL, second.fileURL, dianes.fileURL]).count == 3)

            // A token provider that now gives Gwen's token cannot sync into Diane's store.
            let tokens = TokenBox(try await LiveSpout.token(sub: "Diane"))
            let switching = server.client(SpoutClientConfiguration(tokenProvider: SpoutTokenProvider { _ in tokens.value }))
            let store = try await switching.syncStore(path: "/pets", query: Self.dianes, key: ["name"], directory: directory)
            #expect(store.fileURL == dianes.fileURL)
            tokens.value = try await LiveSpout.token(sub: "Gwen")
            await #expect(throws: SpoutClientError.self) { try await store.sync() }
            #expect(try await store.snapshot().rows.count == 2)
        }
    }

    @Test("410 Gone: the store syncs again from the beginning, and rows deleted meanwhile leave it", arguments: SQLDialect.allCases)
    func goneStartsAgain(_ dialect: SQLDialect) async throws {
        let directory = Self.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Self.withPets(dialect) { server, databaseURL in
            let diane = try await Self.client(server, sub: "Diane")
            _ = try await diane.send(.post, path: "/pets", body: .form([URLQueryItem(name: "name", value: "Rex")]))
            let store = try await diane.syncStore(path: "/pets", query: Self.dianes, key: ["name"], directory: directory)
            try await store.sync()
            #expect(try await store.snapshot().decode(Pet.self).map(\.name) == ["Bowser", "Puffball", "Rex"])

            _ = try await diane.send(.delete, path: "/pets/Rex")
            // Every change pruned: the store's cursor is older than what the log keeps. SQLite's
            // log counts whole seconds: the last change must be a second old to be prunable.
            // PostgreSQL's pruning stops below the oldest transaction still running in the
            // cluster (another test's, maybe): prune until both of Rex's changes are gone.
            try await Task.sleep(for: .milliseconds(1_100))
            let pruned = try await onThread {
                let database = try Drivers.open(databaseURL)
                defer { database.close() }
                var pruned = 0
                let deadline = ContinuousClock.now + .seconds(20)
                while pruned < 2, ContinuousClock.now < deadline {
                    pruned += try database.withConnection(readOnly: false) { connection in
                        try (connection as? any ChangeTracking)?.pruneChanges(olderThan: 0) ?? 0
                    }
                    if pruned < 2 { Thread.sleep(forTimeInterval: 0.1) }
                }
                return pruned
            }
            #expect(pruned >= 2)
            let again = try await store.sync()
            #expect(again.isWhole)
            let after = try await store.snapshot()
            #expect(try after.decode(Pet.self).map(\.name) == ["Bowser", "Puffball"])
            #expect(Set(after.rows.map(\.json)) == (try await Self.ordinaryRows(diane)))
            #expect(try await store.sync().isWhole == false)
        }
    }

    /// A transport whose bodies end early: every byte but the last ten of the first chunk,
    /// then ``SpoutClientError/truncatedBody``, as a connection lost mid-body throws.
    final class CuttingTransport: SpoutTransport {
        let inner: any SpoutTransport = SpoutClient.defaultTransport()

        func perform(_ request: TransportRequest) async throws -> TransportResponse {
            let response = try await self.inner.perform(request)
            return TransportResponse(status: response.status, headers: response.headers, body: CutBody(inner: response.body))
        }

        final class CutBody: ResponseBodyReader {
            let inner: any ResponseBodyReader
            let sent = Mutex(false)

            init(inner: any ResponseBodyReader) {
                self.inner = inner
            }

            func nextChunk() async throws -> [UInt8]? {
                guard !self.sent.withLock({ $0 }), let chunk = try await self.inner.nextChunk(), chunk.count > 10 else {
                    self.inner.close()
                    throw SpoutClientError.truncatedBody
                }
                self.sent.withLock { $0 = true }
                return Array(chunk.dropLast(10))
            }

            func close() { self.inner.close() }
        }
    }

    @Test("a sync whose body is cut short changes nothing; the next one applies the whole delta", arguments: SQLDialect.allCases)
    func truncatedSyncChangesNothing(_ dialect: SQLDialect) async throws {
        let directory = Self.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Self.withPets(dialect) { server, _ in
            let configuration = SpoutClientConfiguration(headers: try await LiveSpout.authorization(sub: "Diane"))
            let diane = server.client(configuration)
            let store = try await diane.syncStore(path: "/pets", query: Self.dianes, key: ["name"], directory: directory)
            try await store.sync()
            let before = try await store.snapshot()
            _ = try await diane.send(.post, path: "/pets", body: .form([URLQueryItem(name: "name", value: "Rex")]))
            _ = try await diane.send(.post, path: "/pets/Puffball", body: .form([URLQueryItem(name: "owner", value: "Gwen")]))

            // The same file through a transport that cuts every body.
            let cut = try await SpoutClient(baseURL: server.baseURL, configuration: configuration, transport: CuttingTransport())
                .syncStore(path: "/pets", query: Self.dianes, key: ["name"], directory: directory)
            #expect(cut.fileURL == store.fileURL)
            await #expect(throws: SpoutClientError.truncatedBody) { try await cut.sync() }
            let after = try await store.snapshot()
            #expect(after.rows == before.rows)
            #expect(after.syncedAt == before.syncedAt)

            let delta = try await store.sync()
            #expect(delta.deleted.contains(#"["Puffball"]"#) && delta.upserted.contains(#"["Rex"]"#))
            #expect(try await store.snapshot().decode(Pet.self).map(\.name) == ["Bowser", "Rex"])
        }
    }

    @Test("snapshots() gives the stored rows, then the rows after each sync that changed them")
    func snapshotsFollowSyncs() async throws {
        let directory = Self.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Self.withPets(.sqlite) { server, _ in
            let diane = try await Self.client(server, sub: "Diane")
            let store = try await diane.syncStore(path: "/pets", query: Self.dianes, key: ["name"], directory: directory)
            var snapshots = await store.snapshots().makeAsyncIterator()
            #expect(try await snapshots.next()?.rows.isEmpty == true)
            try await store.sync()
            #expect(try await snapshots.next()?.rows.count == 2)
            _ = try await diane.send(.post, path: "/pets", body: .form([URLQueryItem(name: "name", value: "Rex")]))
            try await store.sync()
            #expect(try await snapshots.next()?.decode(Pet.self).map(\.name) == ["Bowser", "Puffball", "Rex"])
        }
    }
}

/// A token a test changes while a client's provider reads it.
final class TokenBox: Sendable {
    private let current: Mutex<String>

    init(_ token: String) {
        self.current = Mutex(token)
    }

    var value: String {
        get { self.current.withLock { $0 } }
        set { self.current.withLock { $0 = newValue } }
    }
}
