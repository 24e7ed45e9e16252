import Foundation
import Testing

@testable import SpoutClient

/// Rows as they arrive, truncated bodies and `Link` paging, against a server the test scripts.
@Suite struct StreamingTests {
    struct Item: Decodable, Equatable {
        var n: Int
    }

    static func client(_ server: ScriptedHTTPServer, _ configuration: SpoutClientConfiguration = .init()) throws -> SpoutClient {
        SpoutClient(baseURL: try #require(URL(string: "http://127.0.0.1:\(server.port)")), configuration: configuration)
    }

    @Test func theFirstRowArrivesBeforeTheServerHasFinished() async throws {
        let (release, releaser) = AsyncStream<Void>.makeStream()
        let server = try await ScriptedHTTPServer.start { _, connection in
            try await connection.sendChunkedHead()
            try await connection.sendChunk(#"[{"n":1},"#)
            // The rest only once the test has its first row.
            for await _ in release { break }
            try await connection.sendChunk(#"{"n":2},{"n":3}]"#)
            try await connection.sendLastChunk()
        }
        let started = ContinuousClock.now
        let rows = try await Self.client(server).rows(Item.self, path: "/items")
        var iterator = rows.makeAsyncIterator()
        let first = try await iterator.next()
        let firstRowAfter = ContinuousClock.now - started
        #expect(first == Item(n: 1))
        print("SpoutClientTests: first row after \(firstRowAfter), the server still holding the rest")
        releaser.yield()
        releaser.finish()
        var rest: [Item] = []
        while let item = try await iterator.next() { rest.append(item) }
        #expect(rest == [Item(n: 2), Item(n: 3)])
        await server.stop()
    }

    @Test func aChunkedBodyClosedMidwayThrows() async throws {
        let server = try await ScriptedHTTPServer.start { _, connection in
            try await connection.sendChunkedHead()
            try await connection.sendChunk(#"[{"n":1},{"n":2},"#)
            // No terminating chunk: the connection closes when this closure returns.
        }
        let rows = try await Self.client(server).rows(Item.self, path: "/items")
        var received: [Item] = []
        await #expect(throws: SpoutClientError.truncatedBody) {
            for try await item in rows { received.append(item) }
        }
        #expect(received == [Item(n: 1), Item(n: 2)])
        await server.stop()
    }

    @Test func aBodyShorterThanItsContentLengthThrows() async throws {
        try await Self.expectTruncated { _, connection in
            try await connection.send("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n[{\"n\":1}]")
        }
    }

    @Test func aCompleteArrayWithoutItsTerminatingChunkIsStillTruncated() async throws {
        // The JSON is whole, but the stream did not end as HTTP says it ends.
        try await Self.expectTruncated { _, connection in
            try await connection.sendChunkedHead()
            try await connection.sendChunk(#"[{"n":1}]"#)
        }
    }

    /// Reading every row of what `answer` sends throws ``SpoutClientError/truncatedBody``.
    static func expectTruncated(_ answer: @escaping ScriptedHTTPServer.Answer) async throws {
        let server = try await ScriptedHTTPServer.start(answer)
        let rows = try await Self.client(server).rows(Item.self, path: "/items")
        await #expect(throws: SpoutClientError.truncatedBody) {
            for try await _ in rows {}
        }
        await server.stop()
    }

    @Test func jsonLinesBodiesStreamToo() async throws {
        let server = try await ScriptedHTTPServer.start { request, connection in
            #expect(request.header("Accept") == "application/x-ndjson")
            try await connection.send("HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n")
            try await connection.sendChunk("{\"n\":1}\n{\"n\"")
            try await connection.sendChunk(":2}\n")
            try await connection.sendLastChunk()
        }
        let rows = try await Self.client(server, SpoutClientConfiguration(rowFormat: .jsonLines)).rows(Item.self, path: "/items")
        var received: [Item] = []
        for try await item in rows { received.append(item) }
        #expect(received == [Item(n: 1), Item(n: 2)])
        await server.stop()
    }

    @Test func allPagesFollowsNextLinksOnTheSameOrigin() async throws {
        let server = try await ScriptedHTTPServer.start { request, connection in
            switch request.target {
            case "/items?pageSize=2":
                try await connection.sendResponse(
                    headers: ["Content-Type: application/json", #"Link: </items?pageSize=2&after=T1>; rel="next""#],
                    body: #"[{"n":1},{"n":2}]"#)
            case "/items?pageSize=2&after=T1":
                try await connection.sendResponse(
                    headers: ["Content-Type: application/json", #"Link: <?pageSize=2&after=T2>; rel="next", </items>; rel="first""#],
                    body: #"[{"n":3},{"n":4}]"#)
            case "/items?pageSize=2&after=T2":
                try await connection.sendResponse(headers: ["Content-Type: application/json"], body: #"[{"n":5}]"#)
            default:
                try await connection.sendResponse(status: "404 Not Found", body: #"{"error":"not found"}"#)
            }
        }
        let client = try Self.client(server)
        let query = [URLQueryItem(name: "pageSize", value: "2")]
        var all: [Int] = []
        for try await item in try await client.rows(Item.self, path: "/items", query: query, allPages: true) { all.append(item.n) }
        #expect(all == [1, 2, 3, 4, 5])
        var firstPage: [Int] = []
        for try await item in try await client.rows(Item.self, path: "/items", query: query) { firstPage.append(item.n) }
        #expect(firstPage == [1, 2])
        await server.stop()
    }

    @Test func aNextLinkToAnotherOriginIsRefused() async throws {
        let server = try await ScriptedHTTPServer.start { _, connection in
            try await connection.sendResponse(
                headers: ["Content-Type: application/json", #"Link: <http://example.invalid/items?after=1>; rel="next""#],
                body: #"[{"n":1}]"#)
        }
        let rows = try await Self.client(server).rows(Item.self, path: "/items", allPages: true)
        await #expect(throws: SpoutClientError.self) {
            for try await _ in rows {}
        }
        await server.stop()
    }

    @Test func errorBodiesThatAreNotSpoutsStillThrowTyped() async throws {
        let server = try await ScriptedHTTPServer.start { _, connection in
            try await connection.sendResponse(status: "502 Bad Gateway", headers: ["Content-Type: text/html"], body: "<html>bad gateway</html>")
        }
        do {
            _ = try await Self.client(server).rows(Item.self, path: "/items")
            Issue.record("a 502 must throw")
        } catch SpoutClientError.server(let error) {
            #expect(error.status == 502)
            #expect(error.parameter == nil)
            #expect(error.message.contains("bad gateway"))
        }
        await server.stop()
    }
}
