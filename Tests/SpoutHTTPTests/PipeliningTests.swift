import Foundation
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import SpoutTestSupport
import Testing

@testable import SpoutHTTP

/// HTTP/1.1 pipelining and shutdown, which the connection handler owns (`PipelinedRequests`):
/// requests that arrive while one is answered wait and are answered in order; reading from the
/// socket goes on while a response is written unless something waits; the parser's refusal of
/// a pipelined request comes after the responses before it; a shutdown ends the request under
/// way with `Connection: close`.
@Suite("Pipelined requests")
struct PipeliningTests {
    /// Counts the reads that reach the socket (it stands between the channel's head and the
    /// connection handler).
    final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = Never
        var reads = 0

        func read(context: ChannelHandlerContext) {
            self.reads += 1
            context.read()
        }
    }

    /// A connection handler serving `GET /greetings/{name}` (204, answered by a task on the
    /// channel's loop: the response is pending until the loop runs) behind a read counter.
    static func channel() throws -> (EmbeddedChannel, ReadCounter) {
        var router = Router()
        router.add(.get, "/greetings/{name}") { request in
            .text("hello \(request.pathKeys["name"] ?? "")")
        }
        let environment = ConnectionEnvironment(
            router: router, configuration: ServerConfiguration(),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), statistics: ServerStatistics())
        let counter = ReadCounter()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(counter)
        try channel.pipeline.syncOperations.addHandler(HTTPConnectionHandler(environment: environment, arrival: RequestArrivalClock()))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 8080)).wait()
        return (channel, counter)
    }

    static func get(_ uri: String, on channel: EmbeddedChannel) throws {
        try channel.writeInbound(HTTPServerRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: uri, headers: ["Host": "x"])))
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
    }

    /// Runs the loop until the tasks that answer have written what they will.
    static func settle(_ channel: EmbeddedChannel) async throws {
        for _ in 0..<50 {
            channel.embeddedEventLoop.run()
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// The responses written so far, as (status, body text, `Connection` field) in order.
    static func responses(_ channel: EmbeddedChannel) throws -> [(status: Int, body: String, connection: String?)] {
        var responses: [(status: Int, body: String, connection: String?)] = []
        while let part = try channel.readOutbound(as: HTTPServerResponsePart.self) {
            switch part {
            case .head(let head): responses.append((Int(head.status.code), "", head.headers["connection"].first))
            case .body(.byteBuffer(let buffer)): responses[responses.count - 1].body += String(buffer: buffer)
            case .body, .end: break
            }
        }
        return responses
    }

    @Test("reads go on while a response is written; a pipelined request holds the next read until it is taken up, in order")
    func readsAndOrder() async throws {
        let (channel, counter) = try Self.channel()
        try Self.get("/greetings/ada", on: channel)
        channel.read()
        #expect(counter.reads == 1, "nothing waits: the read reaches the socket while the response is pending")
        try Self.get("/greetings/grace", on: channel)
        try Self.get("/greetings/edsger", on: channel)
        channel.read()
        #expect(counter.reads == 1, "two requests wait: the read waits with them")
        try await Self.settle(channel)
        let responses = try Self.responses(channel)
        #expect(responses.map(\.body) == ["hello ada", "hello grace", "hello edsger"])
        #expect(responses.allSatisfy { $0.status == 200 && $0.connection == nil })
        #expect(counter.reads == 2, "the waiting read goes once they are taken up")
        #expect(channel.isActive)
        _ = try channel.finish(acceptAlreadyClosed: true)
    }

    @Test("the parser's refusal of a pipelined request is answered after the response before it, then the connection closes")
    func parserErrorWaitsItsTurn() async throws {
        let (channel, _) = try Self.channel()
        try Self.get("/greetings/ada", on: channel)
        channel.pipeline.fireErrorCaught(HTTPParserError.invalidHeaderToken)
        #expect(try Self.responses(channel).isEmpty, "nothing is answered before the first response")
        try await Self.settle(channel)
        let responses = try Self.responses(channel)
        #expect(responses.map(\.status) == [200, 400])
        #expect(responses.map(\.body) == ["hello ada", #"{"error":"malformed request"}"#])
        #expect(responses.last?.connection == "close")
        #expect(!channel.isActive)
        _ = try channel.finish(acceptAlreadyClosed: true)
    }

    @Test("shutdown closes an idle connection at once")
    func shutdownClosesIdle() throws {
        let (channel, _) = try Self.channel()
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        #expect(!channel.isActive)
        _ = try channel.finish(acceptAlreadyClosed: true)
    }

    @Test("shutdown ends the request under way with Connection: close and drops what was pipelined behind it")
    func shutdownEndsTheRequestUnderWay() async throws {
        let (channel, _) = try Self.channel()
        try Self.get("/greetings/ada", on: channel)
        try Self.get("/greetings/grace", on: channel)
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        #expect(channel.isActive, "the request under way is answered first")
        try await Self.settle(channel)
        let responses = try Self.responses(channel)
        #expect(responses.map(\.body) == ["hello ada"])
        #expect(responses.first?.connection == "close")
        #expect(!channel.isActive)
        _ = try channel.finish(acceptAlreadyClosed: true)
    }

    @Test("through a socket: a slow request, an upload, 300 requests and bad bytes, all sent at once, answered in order; a HEAD among them")
    func pipelinedThroughASocket() async throws {
        var router = Router()
        router.add(.get, "/slow") { _ in
            try await Task.sleep(for: .milliseconds(200))
            return .text("slow")
        }
        router.add(.post, "/echo") { request in .bytes(request.body, contentType: "application/octet-stream") }
        router.add(.get, "/n/{n}") { request in .text(request.pathKeys["n"] ?? "") }
        let server = HTTPServer(
            router: router, configuration: ServerConfiguration(host: "127.0.0.1", port: 0, eventLoopThreads: 1),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        try await server.start()
        let port = try #require(server.boundPort)
        let upload = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let (responses, closed) = try await onThread { () throws -> ([HTTPTestResponse], Bool) in
            let client = try HTTPTestConnection(port: port)
            var bytes = Array("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
            bytes += Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: \(upload.count)\r\n\r\n".utf8) + upload
            for n in 0..<300 { bytes += Array("GET /n/\(n) HTTP/1.1\r\nHost: x\r\n\r\n".utf8) }
            bytes += Array("GET /n/x HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n".utf8)
            try client.send(bytes)
            var responses: [HTTPTestResponse] = []
            for _ in 0..<303 { responses.append(try client.readResponse()) }
            let rest = try client.readUntilClosed()
            return (responses, rest.isEmpty && client.isClosedByPeer)
        }
        let (head, afterHead) = try await onThread { () throws -> (HTTPTestResponse, HTTPTestResponse) in
            // A HEAD between two GETs: its answer has no body, and the next one is whole.
            let client = try HTTPTestConnection(port: port)
            try client.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\nHEAD /n/7 HTTP/1.1\r\nHost: x\r\n\r\nGET /n/8 HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = try client.readResponse()
            return (try client.readResponse(isHead: true), try client.readResponse())
        }
        await server.shutdown()
        #expect(head.status == 200 && head.body.isEmpty && head.header("Content-Length") == "1")
        #expect(afterHead.status == 200 && afterHead.text == "8")
        #expect(responses[0].status == 200 && responses[0].text == "slow")
        #expect(responses[1].status == 200 && responses[1].body == upload)
        #expect(responses[2..<302].map(\.text) == (0..<300).map(String.init))
        #expect(responses[302].status == 400 && responses[302].header("Connection") == "close")
        #expect(closed)
    }
}
