import Foundation
import HTTPTypes
import SpoutClient
import Synchronization
import Testing

/// ``SpoutTokenProvider`` against a real `spout serve`: the token goes on every request, a
/// `401` asks for a renewed token once, and the disk cache keeps each identity's bodies apart.
@Suite("Token provider")
struct TokenProviderTests {
    /// A provider that records how it was asked and answers from `tokens` (renew: false,
    /// renew: true).
    final class RecordingProvider: Sendable {
        let asks = Mutex<[Bool]>([])
        let current: String
        let renewed: String

        init(current: String, renewed: String) {
            self.current = current
            self.renewed = renewed
        }

        var provider: SpoutTokenProvider {
            SpoutTokenProvider { renew in
                self.asks.withLock { $0.append(renew) }
                return renew ? self.renewed : self.current
            }
        }

        var recorded: [Bool] { self.asks.withLock { $0 } }
    }

    struct Pet: Decodable, Equatable {
        var name: String
        var owner: String
    }

    @Test func aRefusedTokenIsRenewedOnceAndTheWriteGoesThrough() async throws {
        try await LiveSpout.with { server in
            let expired = try await LiveSpout.token(sub: "Tess", arguments: ["--expires-in=-3600"])
            let fresh = try await LiveSpout.token(sub: "Tess")
            let tokens = RecordingProvider(current: expired, renewed: fresh)
            let client = server.client(SpoutClientConfiguration(tokenProvider: tokens.provider))

            let body = SpoutRequestBody.form([URLQueryItem(name: "name", value: "Tokened"), URLQueryItem(name: "species", value: "cat")])
            let created = try await client.send(.post, path: "/pets", body: body)
            #expect(created.status == 201)
            #expect(try created.decode(Pet.self) == Pet(name: "Tokened", owner: "Tess"))
            #expect(tokens.recorded == [false, true])

            // Every request carries the provider's token; a GET refused once is renewed too.
            let deleted = try await client.send(.delete, path: "/pets/Tokened")
            #expect(deleted.status == 204)
            #expect(tokens.recorded == [false, true, false, true])
            _ = try await client.object(Pet.self, path: "/pets/Fluffy")
            #expect(tokens.recorded.count == 5)
        }
    }

    @Test func aSecondRefusalIsThrownWithoutAskingAThirdTime() async throws {
        try await LiveSpout.with { server in
            let tokens = RecordingProvider(current: "not.a.token", renewed: "still.not.token")
            let client = server.client(SpoutClientConfiguration(tokenProvider: tokens.provider))
            do {
                _ = try await client.send(.delete, path: "/pets/Fluffy")
                Issue.record("a refused token deleted a pet")
            } catch SpoutClientError.server(let error) {
                #expect(error.status == 401)
                #expect(error.message.hasPrefix("invalid token"))
            }
            #expect(tokens.recorded == [false, true])
            #expect(try await server.client().object(Pet.self, path: "/pets/Fluffy").name == "Fluffy")
        }
    }

    @Test func theDiskCacheNeverAnswersOneIdentityWithAnothersBody() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-client-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = SpoutCacheConfiguration(directory: directory, staleIfUnavailable: true)
        func client(_ server: LiveSpout, token: String?) -> SpoutClient {
            let provider = token.map { token in SpoutTokenProvider { _ in token } }
            return server.client(SpoutClientConfiguration(cache: cache, tokenProvider: provider))
        }
        let server = try await LiveSpout.start()
        let ann = try await LiveSpout.token(sub: "Ann")
        let annAgain = try await LiveSpout.token(sub: "Ann", arguments: ["--expires-in=7200"])
        let bob = try await LiveSpout.token(sub: "Bob")
        #expect(ann != annAgain)
        #expect(try await client(server, token: ann).objectResponse(Pet.self, path: "/pets/Claws").source == .network)
        await server.stop()

        // Offline: Ann's renewed token finds Ann's copy; Bob and an anonymous caller find none.
        let stale = try await client(server, token: annAgain).objectResponse(Pet.self, path: "/pets/Claws")
        #expect(stale.source.isStale && stale.value.name == "Claws")
        await #expect(throws: SpoutClientError.self) {
            _ = try await client(server, token: bob).objectResponse(Pet.self, path: "/pets/Claws")
        }
        await #expect(throws: SpoutClientError.self) {
            _ = try await client(server, token: nil).objectResponse(Pet.self, path: "/pets/Claws")
        }
    }
}
