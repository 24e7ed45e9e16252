import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// The default ``SpoutTransport``: HTTP/1.1 over SwiftNIO, one connection per exchange.
///
/// Why NIO and not `URLSession` or AsyncHTTPClient:
/// - `URLSession.bytes(for:)`, the only way to read a `URLSession` body as it arrives, does not
///   exist in swift-corelibs-foundation: on Linux, `URLSession` hands over a body whole.
/// - AsyncHTTPClient streams, but brings swift-nio-ssl (BoringSSL), swift-nio-http2 and more
///   into every build of this package and its CI. NIOCore, NIOPosix and NIOHTTP1 are already
///   dependencies of the server: this transport adds none.
///
/// Backpressure is real: the channel runs with `autoRead` off and the socket is read only
/// when the consumer asks for the next chunk (``ResponseStreamHandler``), so a slow consumer
/// stops TCP, and the server, instead of piling bytes up in memory.
///
/// Plain HTTP only: Spout is deployed behind a TLS-terminating proxy, and the client talks to
/// it (or to a proxy's plain listener on the same network). An `https` URL is refused. A
/// transport for Apple platforms on `URLSession` (TLS included) fits behind ``SpoutTransport``.
///
/// Connections are not pooled: each exchange connects, sends `Connection: close` and closes
/// when its body ends or its reader is released.
public struct NIOHTTPTransport: SpoutTransport {
    private let group: any EventLoopGroup
    private let connectTimeout: TimeAmount
    private let readTimeout: TimeAmount?

    /// - Parameters:
    ///   - group: where the connections live; by default NIO's shared singleton group.
    ///   - connectTimeout: how long a connection may take to be made.
    ///   - readTimeout: how long the server may stay silent while the client waits for the
    ///     response head or for more of the body (``SpoutClientError/timedOut(_:)``); a
    ///     consumer's own pauses do not count. Nil (the default) waits as long as the server
    ///     takes; cancelling the task always stops the wait.
    public init(
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, connectTimeout: Duration = .seconds(10),
        readTimeout: Duration? = nil
    ) {
        self.group = group
        self.connectTimeout = TimeAmount(connectTimeout)
        self.readTimeout = readTimeout.map { TimeAmount($0) }
    }

    public func perform(_ request: TransportRequest) async throws -> TransportResponse {
        guard request.url.scheme?.lowercased() == "http", let host = request.url.host, !host.isEmpty else {
            throw SpoutClientError.invalidURL("\(request.url.absoluteString): only http:// URLs (Spout sits behind a TLS proxy)")
        }
        let port = request.url.port ?? 80
        let eventLoop = self.group.next()
        let headPromise = eventLoop.makePromise(of: HTTPResponseHead.self)
        let readTimeout = self.readTimeout
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: eventLoop)
                .connectTimeout(self.connectTimeout)
                .channelOption(.autoRead, value: false)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(ResponseStreamHandler(headPromise: headPromise, readTimeout: readTimeout))
                    }
                }
                .connect(host: host, port: port)
                .get()
        } catch {
            headPromise.fail(SpoutClientError.connectionFailed(String(describing: error)))
            try Task.checkCancellation()
            throw SpoutClientError.connectionFailed("\(host):\(port): \(error)")
        }
        let handler = try await channel.eventLoop.submit {
            NIOLoopBound(try channel.pipeline.syncOperations.handler(type: ResponseStreamHandler.self), eventLoop: channel.eventLoop)
        }.get()

        let head = Self.requestHead(for: request, host: host, port: port)
        let body = request.body
        let responseHead: HTTPResponseHead
        do {
            responseHead = try await withTaskCancellationHandler {
                try await channel.eventLoop.flatSubmit {
                    channel.write(HTTPClientRequestPart.head(head), promise: nil)
                    if let body, !body.isEmpty {
                        channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: body))), promise: nil)
                    }
                    channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
                    handler.value.readHead()
                    return handler.value.head
                }.get()
            } onCancel: {
                channel.close(promise: nil)
            }
        } catch {
            channel.close(promise: nil)
            // A cancelled task's closed connection is its cancellation, not an outage (the
            // stale policy must not answer it).
            try Task.checkCancellation()
            throw error
        }
        let headers = SpoutHeaders(responseHead.headers.map { (name: $0.name, value: $0.value) })
        return TransportResponse(
            status: Int(responseHead.status.code), headers: headers, body: NIOResponseBody(channel: channel, handler: handler))
    }

    /// The request head: the origin-form target, `Host`, `Connection: close`, and
    /// `Content-Length` when there is a body.
    static func requestHead(for request: TransportRequest, host: String, port: Int) -> HTTPRequestHead {
        var target = request.url.path.isEmpty ? "/" : request.url.path
        if let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false) {
            target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
            if let query = components.percentEncodedQuery { target += "?" + query }
        }
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: port == 80 ? host : "\(host):\(port)")
        headers.add(name: "Connection", value: "close")
        for field in request.headers { headers.add(name: field.name, value: field.value) }
        if let body = request.body { headers.replaceOrAdd(name: "Content-Length", value: String(body.count)) }
        return HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: request.method), uri: target, headers: headers)
    }
}
