import Foundation
import HTTPTypes
import SpoutTestSupport
import Synchronization
import Testing

@testable import SpoutClient

/// The on-disk cache: revalidation with `If-None-Match`, LRU eviction under the size bound,
/// and the stale copy when the server is gone (against a real Spout).
@Suite struct CacheTests {
    struct Item: Decodable, Equatable {
        var n: Int
        var pad: String?
    }

    /// A fresh cache folder in the temporary directory, removed by the caller.
    static func makeCacheDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("spout-client-cache-\(UUID().uuidString)")
    }

    static func collect<Row>(_ rows: SpoutRows<Row>) async throws -> [Row] {
        var all: [Row] = []
        for try await row in rows { all.append(row) }
        return all
    }

    @Test func theSecondCallRevalidatesWith304() async throws {
        let server = try await ScriptedHTTPServer.start { request, connection in
            if request.header("If-None-Match") == #""v1""# {
                try await connection.sendResponse(status: "304 Not Modified", headers: [#"ETag: "v1""#], body: "")
            } else {
                try await connection.sendResponse(
                    headers: ["Content-Type: application/json", #"ETag: "v1""#], body: #"[{"n":1},{"n":2}]"#)
            }
        }
        let directory = Self.makeCacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let client = SpoutClient(
            baseURL: try #require(URL(string: "http://127.0.0.1:\(server.port)")),
            configuration: SpoutClientConfiguration(cache: SpoutCacheConfiguration(directory: directory)))

        let first = try await client.rows(Item.self, path: "/items")
        #expect(first.source == .network)
        #expect(try await Self.collect(first) == [Item(n: 1), Item(n: 2)])
        let second = try await client.rows(Item.self, path: "/items")
        #expect(second.source == .revalidated)
        #expect(try await Self.collect(second) == [Item(n: 1), Item(n: 2)])

        let requests = server.requests
        #expect(requests.count == 2)
        #expect(requests.first?.header("If-None-Match") == nil)
        #expect(requests.last?.header("If-None-Match") == #""v1""#)
        await server.stop()
    }

    @Test func aTruncatedBodyIsNeverStored() async throws {
        let server = try await ScriptedHTTPServer.start { request, connection in
            try await connection.sendChunkedHead(headers: [#"ETag: "v1""#])
            try await connection.sendChunk(#"[{"n":1},"#)
            if request.header("X-Finish") != nil {
                try await connection.sendChunk(#"{"n":2}]"#)
                try await connection.sendLastChunk()
            }
        }
        let directory = Self.makeCacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let base = try #require(URL(string: "http://127.0.0.1:\(server.port)"))
        let cache = SpoutCacheConfiguration(directory: directory, staleIfUnavailable: true)
        let cutting = SpoutClient(baseURL: base, configuration: SpoutClientConfiguration(cache: cache))
        let finishing = SpoutClient(
            baseURL: base, configuration: SpoutClientConfiguration(headers: [HTTPField.Name("X-Finish")!: "1"], cache: cache))

        await #expect(throws: SpoutClientError.truncatedBody) {
            _ = try await Self.collect(try await cutting.rows(Item.self, path: "/items"))
        }
        #expect(try await Self.collect(try await finishing.rows(Item.self, path: "/items")) == [Item(n: 1), Item(n: 2)])
        #expect(server.requests.map { $0.header("If-None-Match") } == [nil, nil])
        await server.stop()
    }

    @Test func aFailingServerIsAnsweredFromTheStaleCopyWhenAllowed() async throws {
        let server = try await ScriptedHTTPServer.start { request, connection in
            if request.header("If-None-Match") == nil {
                try await connection.sendResponse(headers: ["Content-Type: application/json", #"ETag: "v1""#], body: #"[{"n":1}]"#)
            } else {
                try await connection.sendResponse(status: "503 Service Unavailable", body: #"{"error":"database unavailable"}"#)
            }
        }
        let directory = Self.makeCacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let base = try #require(URL(string: "http://127.0.0.1:\(server.port)"))
        let stale = SpoutClient(
            baseURL: base,
            configuration: SpoutClientConfiguration(cache: SpoutCacheConfiguration(directory: directory, staleIfUnavailable: true)))
        let strict = SpoutClient(
            baseURL: base, configuration: SpoutClientConfiguration(cache: SpoutCacheConfiguration(directory: directory)))

        #expect(try await Self.collect(try await stale.rows(Item.self, path: "/items")) == [Item(n: 1)])
        let answered = try await stale.rows(Item.self, path: "/items")
        #expect(answered.source.isStale)
        #expect(try await Self.collect(answered) == [Item(n: 1)])
        do {
            _ = try await strict.rows(Item.self, path: "/items")
            Issue.record("a 503 must throw without the stale policy")
        } catch SpoutClientError.server(let error) {
            #expect(error.status == 503)
            #expect(error.message == "database unavailable")
        }
        await server.stop()
    }

    @Test func leastRecentlyUsedBodiesAreEvictedBeyondTheBound() async throws {
        // Every body is 100 bytes; the cache holds 250.
        let server = try await ScriptedHTTPServer.start { request, connection in
            let name = String(request.target.dropFirst())
            if let etag = request.header("If-None-Match"), etag == #""\#(name)""# {
                try await connection.sendResponse(status: "304 Not Modified", body: "")
                return
            }
            let size = name == "big" ? 300 : 100
            let body = #"[{"n":1,"pad":""# + String(repeating: "x", count: size - 20) + #""}]"#
            try await connection.sendResponse(headers: ["Content-Type: application/json", #"ETag: "\#(name)""#], body: body)
        }
        let directory = Self.makeCacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let client = SpoutClient(
            baseURL: try #require(URL(string: "http://127.0.0.1:\(server.port)")),
            configuration: SpoutClientConfiguration(cache: SpoutCacheConfiguration(directory: directory, maximumBytes: 250)))
        func fetch(_ path: String) async throws -> ResponseSource {
            let rows = try await client.rows(Item.self, path: path)
            _ = try await Self.collect(rows)
            return rows.source
        }
        #expect(try await fetch("/a") == .network)
        #expect(try await fetch("/b") == .network)
        #expect(try await fetch("/a") == .revalidated)  // a is now the most recently used
        #expect(try await fetch("/c") == .network)  // 300 bytes > 250: b goes
        #expect(try await fetch("/big") == .network)  // bigger than the cache: not stored
        #expect(try await fetch("/a") == .revalidated)
        #expect(try await fetch("/b") == .network)
        #expect(try await fetch("/big") == .network)
        #expect(server.requests.map { $0.header("If-None-Match") != nil } == [false, false, true, false, false, true, false, false])
        await server.stop()
    }

    @Test func aStaleCopyAnswersWhenTheServerIsGoneIfThePolicyAllows() async throws {
        let directory = Self.makeCacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let query = [URLQueryItem(name: "owner", value: "Gwen")]
        struct Pet: Decodable, Equatable {
            var name: String
            var species: String
            var birth: Date
        }
        let stalePolicy = SpoutClientConfiguration(cache: SpoutCacheConfiguration(directory: directory, staleIfUnavailable: true))
        let strictPolicy = SpoutClientConfiguration(cache: SpoutCacheConfiguration(directory: directory, staleIfUnavailable: false))

        let server = try await LiveSpout.start()
        let fresh = try await server.client(stalePolicy).rows(Pet.self, path: "/pets", query: query)
        #expect(fresh.source == .network)
        let pets = try await Self.collect(fresh)
        #expect(pets.map(\.name) == ["Chirpy", "Claws", "Whistler"])
        let gwensCat = try await server.client(stalePolicy).objectResponse(Pet.self, path: "/pets/Claws")
        #expect(gwensCat.source == .network)
        await server.stop()

        // The server is gone: connections are refused.
        let stale = try await server.client(stalePolicy).rows(Pet.self, path: "/pets", query: query)
        #expect(stale.source.isStale)
        #expect(try await Self.collect(stale) == pets)
        let staleCat = try await server.client(stalePolicy).objectResponse(Pet.self, path: "/pets/Claws")
        #expect(staleCat.source.isStale)
        #expect(staleCat.value == gwensCat.value)

        await #expect(throws: SpoutClientError.self) {
            _ = try await server.client(strictPolicy).rows(Pet.self, path: "/pets", query: query)
        }
        // Nothing stored for this URL: the error, whatever the policy.
        await #expect(throws: SpoutClientError.self) {
            _ = try await server.client(stalePolicy).rows(Pet.self, path: "/pets", query: [URLQueryItem(name: "owner", value: "Diane")])
        }
    }
}
