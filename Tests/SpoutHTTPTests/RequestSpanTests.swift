import HTTPTypes
import InMemoryTracing
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import SpoutCore
import Testing
import Tracing

@testable import SpoutHTTP

/// The request span's life on one connection (#34), with no database and no socket: an
/// `EmbeddedChannel` runs the connection handler with swift-distributed-tracing's in-memory
/// tracer. Every request whose head arrived has its span ended exactly once, also when no
/// response is ever sent (the tracer would hold an unended span for good).
@Suite("Request spans (EmbeddedChannel)")
struct RequestSpanTests {
    /// A connection handler with `tracer`, serving a router with one route.
    static func channel(tracer: InMemoryTracer, maximumBodySize: Int = 1024) throws -> EmbeddedChannel {
        var router = Router()
        router.add(.get, "/greetings/{name}") { _ in .noContent() }
        var configuration = ServerConfiguration()
        configuration.maximumBodySize = maximumBodySize
        let environment = ConnectionEnvironment(
            router: router, configuration: configuration,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), statistics: ServerStatistics(), tracer: tracer)
        return EmbeddedChannel(handler: HTTPConnectionHandler(environment: environment, arrival: RequestArrivalClock()))
    }

    /// Reads what the handler wrote, then ends the channel: nothing may be left in it.
    static func finish(_ channel: EmbeddedChannel) throws -> [HTTPServerResponsePart] {
        var parts: [HTTPServerResponsePart] = []
        while let part = try channel.readOutbound(as: HTTPServerResponsePart.self) { parts.append(part) }
        let leftOver = try channel.finish(acceptAlreadyClosed: true)
        #expect(leftOver.isClean, "the channel ends with \(leftOver)")
        return parts
    }

    static func head(_ method: HTTPMethod, _ uri: String, contentLength: Int? = nil) -> HTTPServerRequestPart {
        var headers: HTTPHeaders = ["Host": "x"]
        if let contentLength { headers.add(name: "Content-Length", value: String(contentLength)) }
        return .head(HTTPRequestHead(version: .http1_1, method: method, uri: uri, headers: headers))
    }

    @Test("a client that leaves before its body arrived: the span ends, abandoned, without a status")
    func abandonedRequestEndsItsSpan() throws {
        let tracer = InMemoryTracer()
        let channel = try Self.channel(tracer: tracer)
        try channel.writeInbound(Self.head(.POST, "/greetings/ada?secret=1", contentLength: 100))
        try channel.writeInbound(HTTPServerRequestPart.body(ByteBuffer(string: "abc")))
        #expect(tracer.finishedSpans.isEmpty)
        #expect(tracer.activeSpans.count == 1)
        channel.pipeline.fireChannelInactive()
        let spans = tracer.finishedSpans
        #expect(spans.count == 1)
        let span = try #require(spans.first)
        #expect(span.operationName == "POST")
        #expect(span.kind == .server)
        #expect(span.attributes["spout.request.abandoned"]?.toSpanAttribute() == .bool(true))
        #expect(span.attributes["http.response.status_code"] == nil)
        #expect(span.status?.code != .error)
        #expect(tracer.activeSpans.isEmpty)
        #expect(try Self.finish(channel).isEmpty, "an abandoned request is not answered")
    }

    @Test("a path no route matches: one span, named by its method, 404, not an error, no path")
    func unroutedRequestIsNamedByItsMethod() throws {
        let tracer = InMemoryTracer()
        let channel = try Self.channel(tracer: tracer)
        try channel.writeInbound(Self.head(.GET, "/nowhere/ada"))
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        let span = try #require(tracer.finishedSpans.first)
        #expect(tracer.finishedSpans.count == 1)
        #expect(span.operationName == "GET")
        #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == .int(404))
        #expect(span.attributes["http.route"] == nil)
        #expect(span.status?.code != .error)
        span.attributes.forEach { _, value in #expect(!"\(value)".contains("nowhere")) }
        // The response names the tracer's span.
        let parts = try Self.finish(channel)
        guard case .head(let response)? = parts.first else { Issue.record("no head: \(parts)"); return }
        #expect(response.status == .notFound)
        #expect(response.headers["traceresponse"].count == 1)
    }

    @Test("a body too large: one span, 413, ended before the connection closes")
    func rejectedBodyEndsItsSpanOnce() throws {
        let tracer = InMemoryTracer()
        let channel = try Self.channel(tracer: tracer, maximumBodySize: 10)
        try channel.writeInbound(Self.head(.POST, "/greetings/ada", contentLength: 100))
        #expect(tracer.finishedSpans.map(\.operationName) == ["POST"])
        #expect(tracer.finishedSpans.first?.attributes["http.response.status_code"]?.toSpanAttribute() == .int(413))
        channel.pipeline.fireChannelInactive()
        #expect(tracer.finishedSpans.count == 1)
        let parts = try Self.finish(channel)
        guard case .head(let response)? = parts.first else { Issue.record("no head: \(parts)"); return }
        #expect(response.status == .payloadTooLarge)
    }
}
