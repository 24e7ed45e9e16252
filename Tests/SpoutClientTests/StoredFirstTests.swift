import Foundation
import Synchronization
import Testing

@testable import SpoutClient

/// The stored copy first, then the fresh one (``SpoutClient/rowsStoredFirst(_:path:query:)``),
/// against a real `spout serve`.
@Suite struct StoredFirstTests {
    struct Pet: Decodable, Equatable {
        var name: String
        var species: String
    }

    /// A transport that holds every request until ``open()`` and records the statuses it got:
    /// what reaches the app before ``open()`` did not come from the network.
    final class HeldTransport: SpoutTransport {
        private let inner = NIOHTTPTransport()
        private let state = Mutex<(isOpen: Bool, held: [CheckedContinuation<Void, Never>], statuses: [Int])>((false, [], []))

        init(open: Bool = false) {
            self.state.withLock { $0.isOpen = open }
        }

        /// The statuses of the responses so far.
        var statuses: [Int] { self.state.withLock { $0.statuses } }

        /// Lets the held requests and every later one through.
        func open() {
            let held = self.state.withLock { state in
                state.isOpen = true
                defer { state.held = [] }
                return state.held
            }
            for request in held { request.resume() }
        }

        func perform(_ request: TransportRequest) async throws -> TransportResponse {
            await withCheckedContinuation { (request: CheckedContinuation<Void, Never>) in
                let passes = self.state.withLock { state in
                    if !state.isOpen { state.held.append(request) }
                    return state.isOpen
                }
                if passes { request.resume() }
            }
            let response = try await self.inner.perform(request)
            self.state.withLock { $0.statuses.append(response.status) }
            return response
        }
    }

    static let gwens = [URLQueryItem(name: "owner", value: "Gwen")]

    @Test(.timeLimit(.minutes(2)))
    func theStoredCopyComesFirstThenTheFreshOneOrNoneAfterA304() async throws {
        let directory = CacheTests.makeCacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = SpoutClientConfiguration(cache: SpoutCacheConfiguration(directory: directory))
        try await LiveSpout.with { server in
            // Nothing stored yet: the server's rows are the only element.
            let first = try await Self.versions(SpoutClient(baseURL: server.baseURL, configuration: cache, transport: HeldTransport(open: true)))
            #expect(first.map(\.source) == [.network])
            let stored = try #require(first.first?.value)
            #expect(stored.map(\.name).sorted() == ["Chirpy", "Claws", "Whistler"])

            // Another client gives Gwen a new pet.
            let gwen = server.client(SpoutClientConfiguration(headers: try await LiveSpout.authorization(sub: "Gwen")))
            _ = try await gwen.send(.post, path: "/pets", body: .form([URLQueryItem(name: "name", value: "Rex"), URLQueryItem(name: "species", value: "dog")]))

            // The stored copy arrives while the request is held; the fresh rows once it goes out.
            let held = HeldTransport()
            let client = SpoutClient(baseURL: server.baseURL, configuration: cache, transport: held)
            var versions = client.rowsStoredFirst(Pet.self, path: "/pets", query: Self.gwens).makeAsyncIterator()
            let storedVersion = try #require(try await versions.next())
            #expect(storedVersion.source.isStale)
            #expect(storedVersion.value == stored)
            #expect(held.statuses.isEmpty, "the stored copy waited for the network")
            held.open()
            let freshVersion = try #require(try await versions.next())
            #expect(freshVersion.source == .network)
            #expect(freshVersion.value.map(\.name).sorted() == ["Chirpy", "Claws", "Rex", "Whistler"])
            #expect(try await versions.next() == nil)
            #expect(held.statuses == [200])

            // Nothing changed since: the server answers 304 and no second copy comes.
            let revalidating = HeldTransport(open: true)
            let again = try await Self.versions(SpoutClient(baseURL: server.baseURL, configuration: cache, transport: revalidating))
            #expect(again.count == 1)
            #expect(again.first?.source.isStale == true)
            #expect(again.first?.value == freshVersion.value)
            #expect(revalidating.statuses == [304])
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func offlineOnlyTheStoredCopyComesThenTheError() async throws {
        let directory = CacheTests.makeCacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = SpoutClientConfiguration(cache: SpoutCacheConfiguration(directory: directory))
        let server = try await LiveSpout.start()
        let online = try await Self.versions(server.client(cache))
        let claws = try await server.client(cache).objectResponse(Pet.self, path: "/pets/Claws")
        await server.stop()

        // The server is gone: connections are refused.
        let client = server.client(cache)
        var received: [SpoutObject<[Pet]>] = []
        do {
            for try await version in client.rowsStoredFirst(Pet.self, path: "/pets", query: Self.gwens) { received.append(version) }
            Issue.record("offline, the versions ended without the error")
        } catch SpoutClientError.connectionFailed {}
        #expect(received.map(\.value) == online.map(\.value))
        #expect(received.allSatisfy { $0.source.isStale })

        var objects: [SpoutObject<Pet>] = []
        await #expect(throws: SpoutClientError.self) {
            for try await version in client.objectStoredFirst(Pet.self, path: "/pets/Claws") { objects.append(version) }
        }
        #expect(objects.map(\.value) == [claws.value])

        // Nothing stored for this URL: the error alone.
        var none: [SpoutObject<[Pet]>] = []
        await #expect(throws: SpoutClientError.self) {
            for try await version in client.rowsStoredFirst(Pet.self, path: "/pets", query: [URLQueryItem(name: "owner", value: "Diane")]) {
                none.append(version)
            }
        }
        #expect(none.isEmpty)
    }

    /// Every version of Gwen's pets through `client`.
    static func versions(_ client: SpoutClient) async throws -> [SpoutObject<[Pet]>] {
        var versions: [SpoutObject<[Pet]>] = []
        for try await version in client.rowsStoredFirst(Pet.self, path: "/pets", query: Self.gwens) { versions.append(version) }
        return versions
    }
}
