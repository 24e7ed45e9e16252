import Foundation
import Logging
import SpoutTestSupport
import Testing

@testable import SpoutHTTP

/// The request bodies held in memory by all connections together (``RequestBodyBudget``): a
/// request that would pass `maximumBufferedBodyBytes` is 503 with `Retry-After` before its body
/// is read, and a request's bytes come back when it ends, however it ends.
@Suite("Request bodies in memory, all connections together")
struct RequestBodyBudgetTests {
    @Test("reservations stay within the limit and give their bytes back once, when ended or freed")
    func reservations() {
        let budget = RequestBodyBudget(limit: 1_000)
        let first = RequestBodyBudget.Reservation(budget: budget)
        #expect(budget.reserve(600, for: first))
        #expect(budget.reserve(300, for: first))
        var second: RequestBodyBudget.Reservation? = RequestBodyBudget.Reservation(budget: budget)
        #expect(!budget.reserve(101, for: second!), "past the limit")
        #expect(budget.reserve(100, for: second!))
        #expect(budget.bytesInUse == 1_000 && first.bytes == 900 && second?.bytes == 100)
        first.end()
        first.end()
        #expect(budget.bytesInUse == 100)
        second = nil
        #expect(budget.bytesInUse == 0, "a freed reservation gives its bytes back")

        let unlimited = RequestBodyBudget(limit: 0)
        let reservation = RequestBodyBudget.Reservation(budget: unlimited)
        #expect(unlimited.reserve(1 << 40, for: reservation))
        reservation.end()
        #expect(unlimited.bytesInUse == 0)
    }

    @Test("through a socket: 503 before the body past the limit, for a length and for chunks; room again once requests end or leave")
    func throughASocket() async throws {
        let (released, release) = AsyncStream<Void>.makeStream()
        var router = Router()
        // Holds its request (and its body) until released.
        router.add(.post, "/hold") { request in
            for await _ in released { break }
            return .text("\(request.body.count)")
        }
        router.add(.post, "/echo") { request in .text("\(request.body.count)") }
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0, eventLoopThreads: 1)
        configuration.maximumBodySize = 4 * 1024 * 1024
        configuration.maximumBufferedBodyBytes = 1_000
        let server = HTTPServer(
            router: router, configuration: configuration, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        try await server.start()
        defer { release.finish() }
        do {
            let port = try #require(server.boundPort)
            let held = try HTTPTestConnection(port: port, timeout: 10)
            try held.send("POST /hold HTTP/1.1\r\nHost: x\r\nContent-Length: 700\r\n\r\n" + String(repeating: "a", count: 700))
            #expect(try await eventually { server.bodyBudget.bytesInUse == 700 })

            let (announced, chunked) = try await onThread { () throws -> (HTTPTestResponse, HTTPTestResponse) in
                // A length past what is left: refused at the head, before `100 Continue`.
                let announced = try HTTPTestConnection(port: port, timeout: 5)
                try announced.send("POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 400\r\n\r\n")
                // Chunks: the first fits (900 in all), the second would not.
                let chunked = try HTTPTestConnection(port: port, timeout: 5)
                try chunked.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nc8\r\n" + String(repeating: "b", count: 200) + "\r\n")
                try chunked.send("c8\r\n" + String(repeating: "c", count: 200) + "\r\n")
                return (try announced.readResponse(), try chunked.readResponse())
            }
            for refused in [announced, chunked] {
                #expect(refused.status == 503 && refused.header("Retry-After") == "1" && refused.header("Connection") == "close")
                #expect(refused.text == #"{"error":"too many request bodies at once; retry"}"#)
            }
            #expect(try await eventually { server.bodyBudget.bytesInUse == 700 }, "refused requests gave their bytes back")

            // The held request ends: its 700 bytes come back.
            release.yield()
            let answer = try await onThread { try held.readResponse() }
            #expect(answer.status == 200 && answer.text == "700")
            #expect(try await eventually { server.bodyBudget.bytesInUse == 0 })

            // A client that announces much and trickles holds only what it sent; leaving in the
            // middle of its body, it gives that back.
            let leaving = try HTTPTestConnection(port: port, timeout: 5)
            try leaving.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 900\r\n\r\n" + String(repeating: "d", count: 100))
            #expect(try await eventually { server.bodyBudget.bytesInUse == 100 })
            leaving.closeNow()
            #expect(try await eventually { server.bodyBudget.bytesInUse == 0 })
            let full = try await onThread { () throws -> HTTPTestResponse in
                let client = try HTTPTestConnection(port: port, timeout: 5)
                try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" + String(repeating: "e", count: 1_000))
                return try client.readResponse()
            }
            #expect(full.status == 200 && full.text == "1000")
        } catch {
            release.finish()
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }
}
