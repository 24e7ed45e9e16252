import Foundation
import SpoutClient
import SpoutCore
import SpoutTestDatabases
import SpoutTestSupport
import Synchronization
import Testing

/// ``SpoutSyncStore/keepCurrent(silenceLimit:maximumPause:)`` against a real `spout serve` of
/// the pets (docs/client.md, Live sync), on SQLite and on PostgreSQL: a write by another
/// client reaches the store without the app calling `sync()`, the live sync survives the
/// server's restart, and cancelling it ends it and closes its stream.
@Suite("Live sync")
struct LiveSyncTests {
    typealias Pet = SyncStoreTests.Pet

    /// Whether a live sync's task has returned.
    final class Ended: Sendable {
        private let flag = Atomic<Bool>(false)
        var value: Bool { self.flag.load(ordering: .acquiring) }
        func set() { self.flag.store(true, ordering: .releasing) }
    }

    /// Runs `store.keepCurrent()` in a task of its own, its pauses at most a second (a
    /// restarting server is found soon); `ended` turns true when it returns.
    static func keepCurrent(_ store: SpoutSyncStore, ended: Ended = Ended()) -> Task<Void, any Error> {
        Task {
            defer { ended.set() }
            try await store.keepCurrent(maximumPause: .seconds(1))
        }
    }

    /// The names in the store once `done` holds for them (or the last reading after a limit
    /// that only ends a broken run), read locally: never a sync of the test's own.
    static func names(in store: SpoutSyncStore, until done: @escaping ([String]) -> Bool) async throws -> [String] {
        try await poll({ try await store.snapshot().decode(Pet.self).map(\.name) }, until: done)
    }

    /// The server's `spout_notice_subscribers` gauge.
    static func subscribers(_ server: LiveSpout) async throws -> Double? {
        let text = String(decoding: try await server.client().bytes(path: "/metrics").value, as: UTF8.self)
        let line = text.split(separator: "\n").first { $0.hasPrefix("spout_notice_subscribers ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    @Test("a write by another client reaches the store by itself; cancelling ends the live sync and its stream", arguments: SQLDialect.allCases)
    func writeArrivesThenCancel(_ dialect: SQLDialect) async throws {
        let directory = SyncStoreTests.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await SyncStoreTests.withPets(dialect) { server, _ in
            let diane = try await SyncStoreTests.client(server, sub: "Diane")
            let store = try await diane.syncStore(path: "/pets", query: SyncStoreTests.dianes, key: ["name"], directory: directory)
            let ended = Ended()
            let live = Self.keepCurrent(store, ended: ended)
            #expect(try await Self.names(in: store) { !$0.isEmpty } == ["Bowser", "Puffball"])
            #expect(try await poll({ try await Self.subscribers(server) }, until: { $0 == 1 }) == 1)

            let other = try await SyncStoreTests.client(server, sub: "Diane")
            _ = try await other.send(.post, path: "/pets", body: .form([URLQueryItem(name: "name", value: "Rex")]))
            #expect(try await Self.names(in: store) { $0.contains("Rex") } == ["Bowser", "Puffball", "Rex"])
            _ = try await other.send(.post, path: "/pets/Puffball", body: .form([URLQueryItem(name: "owner", value: "Gwen")]))
            #expect(try await Self.names(in: store) { !$0.contains("Puffball") } == ["Bowser", "Rex"])
            #expect(Set(try await store.snapshot().rows.map(\.json)) == (try await SyncStoreTests.ordinaryRows(diane)))

            live.cancel()
            #expect(try await poll({ ended.value }, until: { $0 }))
            try await live.value
            #expect(try await poll({ try await Self.subscribers(server) }, until: { $0 == 0 }) == 0)
        }
    }

    /// A pets database that outlives a server (nil when PostgreSQL is not there): an SQLite
    /// file in a folder the server's user may write, or a PostgreSQL database; `body` gets
    /// its URL.
    static func withDatabase(_ dialect: SQLDialect, _ body: (String) async throws -> Void) async throws {
        let url: String
        var cleanUp: () -> Void
        switch dialect {
        case .sqlite:
            let folder = SyncStoreTests.makeDirectory()
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: folder.path)
            url = "sqlite:" + folder.appendingPathComponent("pets.sqlite").path
            cleanUp = { try? FileManager.default.removeItem(at: folder) }
        case .postgres:
            guard TestDatabases.postgresEnabled else { return }
            let database = try await onThread { try TestDatabases.makePostgresDatabase(prefix: "spout_client_live") }
            url = database.url
            cleanUp = { database.drop() }
        }
        defer { cleanUp() }
        let load = try await ChildProcess.run(
            executable: try ChildProcess.spoutExecutable(),
            arguments: ["load-pets", "--database", url, "--sql-directory", TestFixtures.repositoryRoot.appendingPathComponent("sql").path])
        #expect(load.status == 0, "\(load.standardError)")
        if dialect == .sqlite {
            let path = String(url.dropFirst("sqlite:".count))
            try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: path)
        }
        try await body(url)
    }

    @Test("the server stops and starts again on the same database: the live sync resumes and a later write arrives", arguments: SQLDialect.allCases)
    func survivesRestart(_ dialect: SQLDialect) async throws {
        let directory = SyncStoreTests.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Self.withDatabase(dialect) { database in
            let environment = ["SPOUT_ENDPOINTS": "endpoints/pets.yaml"]
            let configuration = SpoutClientConfiguration(headers: try await LiveSpout.authorization(sub: "Diane"))
            let (store, live, baseURL) = try await LiveSpout.with(environment: environment, extraArguments: ["--database", database]) { first in
                let store = try await first.client(configuration)
                    .syncStore(path: "/pets", query: SyncStoreTests.dianes, key: ["name"], directory: directory)
                let live = Self.keepCurrent(store)
                do {
                    #expect(try await Self.names(in: store) { !$0.isEmpty } == ["Bowser", "Puffball"])
                    #expect(try await poll({ try await Self.subscribers(first) }, until: { $0 == 1 }) == 1)
                } catch {
                    live.cancel()
                    throw error
                }
                return (store, live, first.baseURL)
            }
            defer { live.cancel() }

            // The same port, so that the store's client finds it again.
            try await LiveSpout.with(
                environment: environment, extraArguments: ["--database", database, "--port", String(baseURL.port ?? 0)]
            ) { second in
                #expect(second.baseURL == baseURL)
                // Resumed: the store's live sync subscribed to the new server.
                #expect(try await poll({ try? await Self.subscribers(second) }, until: { $0 == 1 }) == 1)
                let other = second.client(configuration)
                _ = try await other.send(.post, path: "/pets", body: .form([URLQueryItem(name: "name", value: "Rex")]))
                #expect(try await Self.names(in: store) { $0.contains("Rex") } == ["Bowser", "Puffball", "Rex"])
            }
        }
    }
}
