import Foundation
@testable import SpoutClient
import Synchronization
import Testing

/// GETs sent again when no response arrived, and only then (``SpoutRetryPolicy``), against a
/// scripted server that drops connections on purpose.
@Suite struct RetryTests {
    struct Pet: Decodable, Equatable {
        var name: String
        var species: String
    }

    static let body = #"{"name":"Fluffy","species":"cat"}"#

    /// A server that closes the first `drops` connections without a byte, then answers.
    static func droppingServer(drops: Int) async throws -> ScriptedHTTPServer {
        let seen = Mutex(0)
        return try await ScriptedHTTPServer.start { _, connection in
            let number = seen.withLock { count -> Int in
                count += 1
                return count
            }
            guard number > drops else { return }
            try await connection.sendResponse(headers: ["Content-Type: application/json"], body: Self.body)
        }
    }

    @Test func aGetWithoutAnyResponseIsSentAgain() async throws {
        let server = try await Self.droppingServer(drops: 2)
        let client = SpoutClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!)
        #expect(try await client.object(Pet.self, path: "/pets/Fluffy").name == "Fluffy")
        #expect(server.requests.count == 3)
        await server.stop()
    }

    @Test func attemptsAreBounded() async throws {
        let server = try await Self.droppingServer(drops: .max)
        let retry = SpoutRetryPolicy(maximumAttempts: 4, initialBackoff: .milliseconds(10))
        let client = SpoutClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, configuration: SpoutClientConfiguration(retry: retry))
        do {
            _ = try await client.object(Pet.self, path: "/pets/Fluffy")
            Issue.record("a server that never answers answered")
        } catch let error as SpoutClientError {
            if case .connectionFailed = error {} else { Issue.record("\(error), not connectionFailed") }
        }
        #expect(server.requests.count == 4)

        let once = SpoutClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, configuration: SpoutClientConfiguration(retry: .never))
        _ = try? await once.object(Pet.self, path: "/pets/Fluffy")
        #expect(server.requests.count == 5)
        await server.stop()
    }

    @Test func aStreamCutAfterRowsWereDeliveredIsNotRetried() async throws {
        let server = try await ScriptedHTTPServer.start { _, connection in
            try await connection.sendChunkedHead()
            try await connection.sendChunk(#"[{"name":"Fluffy","species":"cat"},{"name":"Claws","species":"cat"},"#)
            // The connection closes here, without the terminating chunk.
        }
        let client = SpoutClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!)
        var names: [String] = []
        do {
            for try await pet in try await client.rows(Pet.self, path: "/pets") { names.append(pet.name) }
            Issue.record("a cut stream ended normally")
        } catch let error as SpoutClientError {
            #expect(error == .truncatedBody)
        }
        #expect(names == ["Fluffy", "Claws"])
        #expect(server.requests.count == 1)
        await server.stop()
    }

    @Test func writesAreNeverRetried() async throws {
        let server = try await Self.droppingServer(drops: 1)
        let client = SpoutClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!)
        await #expect(throws: SpoutClientError.self) {
            _ = try await client.send(.post, path: "/pets", body: SpoutRequestBody(contentType: "application/json", bytes: Array(Self.body.utf8)))
        }
        #expect(server.requests.count == 1)
        await server.stop()
    }
}

/// The pauses between attempts.
@Suite struct RetryPolicyTests {
    @Test func backoffDoublesUpToItsBound() {
        let policy = SpoutRetryPolicy(maximumAttempts: 6, initialBackoff: .milliseconds(100), maximumBackoff: .milliseconds(500))
        #expect((2...6).map { policy.backoff(before: $0) } == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(500), .milliseconds(500)])
        #expect(SpoutRetryPolicy(maximumAttempts: 0).maximumAttempts == 1)
        #expect(SpoutRetryPolicy.never.maximumAttempts == 1)
    }
}
