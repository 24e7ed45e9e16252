import Foundation
import HTTPTypes
import SpoutClient
import SpoutCore
import SpoutTestSupport
import Synchronization
import Testing

/// ``SpoutWriteQueue`` against a real `spout serve` of the pets (docs/client.md, Write queue), on
/// SQLite and on PostgreSQL: a write whose answer was lost is sent again after a restart and
/// applied once; a stale `If-Match` is a typed conflict with the current row.
@Suite("Write queue")
struct WriteQueueTests {
    /// A row of `GET /pets/{name}` and of the writes' answers.
    struct Pet: Decodable, Equatable {
        var name: String
        var owner: String
        var species: String?
    }

    /// A transport that sends each request to the server through a real one, and, while
    /// ``losing`` is set, drops the answer and throws as a connection lost before the head
    /// would: the server applied the write, the app does not know.
    final class LosingTransport: SpoutTransport {
        let inner: any SpoutTransport = SpoutClient.defaultTransport()
        let losing = Mutex(false)

        func perform(_ request: TransportRequest) async throws -> TransportResponse {
            let response = try await self.inner.perform(request)
            guard self.losing.withLock({ $0 }) else { return response }
            while try await response.body.nextChunk() != nil {}
            throw SpoutClientError.connectionFailed("the answer was lost (test)")
        }
    }

    /// Diane's pets named `name` as the server has them now.
    static func pets(named name: String, _ server: LiveSpout) async throws -> [SyncStoreTests.Pet] {
        var found: [SyncStoreTests.Pet] = []
        let query = [URLQueryItem(name: "owner", value: "Diane")]
        for try await pet in try await server.client().rows(SyncStoreTests.Pet.self, path: "/pets", query: query) where pet.name == name {
            found.append(pet)
        }
        return found
    }

    @Test("a write whose answer was lost stays queued across a restart and is applied once when sent again", arguments: SQLDialect.allCases)
    func lostAnswerAppliesOnce(_ dialect: SQLDialect) async throws {
        let directory = SyncStoreTests.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await SyncStoreTests.withPets(dialect) { server, _ in
            let configuration = SpoutClientConfiguration(headers: try await LiveSpout.authorization(sub: "Diane"))
            let transport = LosingTransport()
            let queue = try await SpoutClient(baseURL: server.baseURL, configuration: configuration, transport: transport)
                .writeQueue(directory: directory)
            let rex = SpoutRequestBody.form([URLQueryItem(name: "name", value: "Rex"), URLQueryItem(name: "species", value: "dog")])
            let queued = try await queue.enqueue(.post, path: "/pets", body: rex)
            #expect(try await queue.pending() == [queued])

            transport.losing.withLock { $0 = true }
            await #expect(throws: SpoutClientError.connectionFailed("the answer was lost (test)")) { try await queue.send() }
            #expect(try await Self.pets(named: "Rex", server).count == 1)
            #expect(try await queue.pending().map(\.idempotencyKey) == [queued.idempotencyKey])

            // The app restarts: a new client and queue on the same file send it again.
            let restarted = try await server.client(configuration).writeQueue(directory: directory)
            #expect(restarted.fileURL == queue.fileURL)
            let replies = try await restarted.send()
            #expect(replies.map(\.status) == [201])
            #expect(replies.first?.headers[HTTPField.Name("Idempotent-Replayed")!] == "true")
            #expect(try replies.first?.decode(Pet.self) == Pet(name: "Rex", owner: "Diane", species: "dog"))
            #expect(try await Self.pets(named: "Rex", server) == [SyncStoreTests.Pet(name: "Rex", species: "dog")])
            #expect(try await restarted.pending().isEmpty)
            #expect(try await restarted.send().isEmpty)
        }
    }

    @Test("a stale If-Match is a typed conflict with the current row; the writes after it stay queued", arguments: SQLDialect.allCases)
    func staleIfMatchIsAConflict(_ dialect: SQLDialect) async throws {
        let directory = SyncStoreTests.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await SyncStoreTests.withPets(dialect) { server, _ in
            let diane = server.client(SpoutClientConfiguration(headers: try await LiveSpout.authorization(sub: "Diane")))
            let seen = try await diane.objectResponse(Pet.self, path: "/pets/Bowser")
            let tag = try #require(seen.headers[.eTag])
            // Another device of Diane's changes Bowser meanwhile.
            _ = try await diane.send(.post, path: "/pets/Bowser", body: .form([URLQueryItem(name: "species", value: "wolf")]))
            let current = try await diane.objectResponse(Pet.self, path: "/pets/Bowser")

            let queue = try await diane.writeQueue(directory: directory)
            let stale = try await queue.enqueue(.post, path: "/pets/Bowser", body: .form([URLQueryItem(name: "species", value: "cat")]), ifMatch: tag)
            let next = try await queue.enqueue(.post, path: "/pets", body: .form([URLQueryItem(name: "name", value: "Rex")]))
            do {
                try await queue.send()
                Issue.record("a stale If-Match was applied")
            } catch SpoutWriteError.conflict(let write, let row) {
                #expect(write == stale)
                #expect(row.status == 412)
                #expect(try row.decode(Pet.self) == Pet(name: "Bowser", owner: "Diane", species: "wolf"))
                #expect(row.headers[.eTag] == current.headers[.eTag])
            }
            #expect(try await queue.pending() == [next])
            #expect(try await diane.object(Pet.self, path: "/pets/Bowser").species == "wolf")
            // The next send goes on with the rest.
            #expect(try await queue.send().map(\.status) == [201])
            #expect(try await queue.pending().isEmpty)
        }
    }
}
