import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPCompression
import NIOPosix
import NIOSSL

/// The ``SpoutTransport`` on Linux (and wherever it is chosen): HTTP/1.1 over SwiftNIO, with
/// TLS through swift-nio-ssl, keep-alive connections pooled per origin, and gzip/deflate
/// bodies decoded as they stream.
///
/// Why NIO and not `URLSession` or AsyncHTTPClient on Linux:
/// - `URLSession.bytes(for:)`, the only way to read a `URLSession` body as it arrives, does not
///   exist in swift-corelibs-foundation: on Linux, `URLSession` hands over a body whole.
/// - AsyncHTTPClient streams, but brings swift-nio-http2 and more into every build. NIOCore,
///   NIOPosix, NIOHTTP1 and NIOHTTPCompression are already dependencies of the server; only
///   swift-nio-ssl is added, for TLS.
///
/// Backpressure is real: the channel runs with `autoRead` off and the socket is read only
/// when the consumer asks for the next chunk (``ResponseStreamHandler``), so a slow consumer
/// stops TCP, and the server, instead of piling bytes up in memory.
///
/// Connections: an exchange takes an idle connection to the same scheme, host and port from
/// the pool, or opens one (TCP, then the TLS handshake for `https`). Once its body ended on a
/// response that allows keep-alive, the connection goes back to the pool (at most
/// `maximumIdleConnectionsPerOrigin` wait there, each at most `idleTimeout`). A body given up
/// before its end closes its connection; so does a response with `Connection: close`. Writes
/// (anything but GET and HEAD) always open a new connection, so that a connection the server
/// closed while it was idle can never swallow a request that must not be sent twice; they
/// leave it in the pool afterwards for the GETs.
///
/// `https` is verified against ``SpoutTLSConfiguration``; a refused certificate is
/// ``SpoutClientError/certificateRejected(_:)``, and an `https` URL never falls back to
/// plain HTTP.
public struct NIOHTTPTransport: SpoutTransport {
    private let group: any EventLoopGroup
    private let connectTimeout: TimeAmount
    private let readTimeout: TimeAmount?
    private let decompresses: Bool
    private let pool: ConnectionPool
    private let tls: TLSContextLoader

    /// - Parameters:
    ///   - group: where the connections live; by default NIO's shared singleton group.
    ///   - connectTimeout: how long a connection may take to be made, TLS handshake included.
    ///   - readTimeout: how long the server may stay silent while the client waits for the
    ///     response head or for more of the body (``SpoutClientError/timedOut(_:)``); a
    ///     consumer's own pauses do not count. Nil (the default) waits as long as the server
    ///     takes; cancelling the task always stops the wait.
    ///   - tls: how `https` servers are trusted; the system's roots by default.
    ///   - maximumIdleConnectionsPerOrigin: how many keep-alive connections to one origin wait
    ///     for reuse (0: none, one connection per exchange).
    ///   - idleTimeout: how long a connection waits in the pool before the client closes it;
    ///     keep it below the server's (Spout's is 60 s, nginx's 75 s).
    ///   - decompresses: send `Accept-Encoding: gzip, deflate` and decode such bodies as they
    ///     arrive (the default); false asks for the identity encoding.
    public init(
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, connectTimeout: Duration = .seconds(10),
        readTimeout: Duration? = nil, tls: SpoutTLSConfiguration = SpoutTLSConfiguration(),
        maximumIdleConnectionsPerOrigin: Int = 4, idleTimeout: Duration = .seconds(30), decompresses: Bool = true
    ) {
        self.group = group
        self.connectTimeout = TimeAmount(connectTimeout)
        self.readTimeout = readTimeout.map { TimeAmount($0) }
        self.decompresses = decompresses
        self.pool = ConnectionPool(maximumIdlePerOrigin: maximumIdleConnectionsPerOrigin, idleTimeout: TimeAmount(idleTimeout))
        self.tls = TLSContextLoader(configuration: tls)
    }

    /// How many connections this transport has opened so far (reuse keeps it small).
    public var connectionsOpened: Int { self.pool.connectionsOpened }

    public func perform(_ request: TransportRequest) async throws -> TransportResponse {
        let origin = try Self.origin(of: request.url)
        let reusesIdle = request.method == .get || request.method == .head
        let connection: ConnectionPool.Connection
        if reusesIdle, let idle = self.pool.take(origin) {
            connection = idle
        } else {
            connection = try await self.connect(origin)
        }
        let channel = connection.channel
        let handler = connection.handler
        let head = Self.requestHead(for: request, origin: origin, decompresses: self.decompresses)
        let body = request.body
        let responseHead: HTTPResponseHead
        do {
            responseHead = try await withTaskCancellationHandler {
                try await channel.eventLoop.flatSubmit {
                    let response = handler.value.begin()
                    channel.write(HTTPClientRequestPart.head(head), promise: nil)
                    if let body, !body.isEmpty {
                        channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: body))), promise: nil)
                    }
                    channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
                    return response
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
        let headers = HTTPFields(responseHead.headers)
        return TransportResponse(
            status: Int(responseHead.status.code), headers: headers, body: NIOResponseBody(connection: connection, pool: self.pool))
    }

    /// Opens a connection to `origin` and, for `https`, completes the TLS handshake (and the
    /// pin check) before returning it: no request is written to an unverified server.
    private func connect(_ origin: ConnectionPool.Origin) async throws -> ConnectionPool.Connection {
        let tls = origin.isSecure ? try self.tls.context() : nil
        let eventLoop = self.group.next()
        let ready = eventLoop.makePromise(of: Void.self)
        let readTimeout = self.readTimeout
        let decompresses = self.decompresses
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: eventLoop)
                .connectTimeout(self.connectTimeout)
                .channelOption(.autoRead, value: false)
                // One socket read (at most 64 KiB) per demand: a compressed read expands about
                // tenfold for Spout's JSON, and all of a read is handed over at once.
                .channelOption(.maxMessagesPerRead, value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let pipeline = channel.pipeline.syncOperations
                        if let tls {
                            let hostname = TLSContext.isAddressLiteral(origin.host) ? nil : origin.host
                            try pipeline.addHandler(try NIOSSLClientHandler(context: tls.sslContext, serverHostname: hostname))
                            try pipeline.addHandler(TLSHandshakeHandler(ready: ready, pins: tls.pins, host: origin.host))
                        } else {
                            ready.succeed()
                        }
                        try pipeline.addHTTPClientHandlers()
                        if decompresses { try pipeline.addHandler(NIOHTTPResponseDecompressor(limit: .none)) }
                        try pipeline.addHandler(ResponseStreamHandler(eventLoop: channel.eventLoop, readTimeout: readTimeout))
                    }
                }
                .connect(host: origin.host, port: origin.port)
                .get()
        } catch {
            ready.fail(SpoutClientError.connectionFailed(String(describing: error)))
            try Task.checkCancellation()
            throw SpoutClientError.connectionFailed("\(origin.host):\(origin.port): \(error)")
        }
        self.pool.register(channel)
        let handshakeLimit = channel.eventLoop.scheduleTask(in: self.connectTimeout) {
            ready.fail(SpoutClientError.connectionFailed("\(origin.host):\(origin.port): no TLS handshake within the connect timeout"))
            channel.close(promise: nil)
        }
        do {
            try await withTaskCancellationHandler {
                try await ready.futureResult.get()
            } onCancel: {
                channel.close(promise: nil)
            }
            handshakeLimit.cancel()
        } catch {
            handshakeLimit.cancel()
            channel.close(promise: nil)
            try Task.checkCancellation()
            throw error as? SpoutClientError ?? .connectionFailed(String(describing: error))
        }
        let handler = try await channel.eventLoop.submit {
            NIOLoopBound(try channel.pipeline.syncOperations.handler(type: ResponseStreamHandler.self), eventLoop: channel.eventLoop)
        }.get()
        return ConnectionPool.Connection(channel: channel, handler: handler, origin: origin)
    }

    /// The origin of an `http` or `https` URL; anything else is
    /// ``SpoutClientError/invalidURL(_:)``.
    static func origin(of url: URL) throws -> ConnectionPool.Origin {
        let scheme = url.scheme?.lowercased() ?? ""
        guard scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty else {
            throw SpoutClientError.invalidURL("\(url.absoluteString): only http:// and https:// URLs")
        }
        // Host names are case-insensitive: one pool entry for `API.example.com` and `api.example.com`.
        let bareHost = (host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host).lowercased()
        return ConnectionPool.Origin(scheme: scheme, host: bareHost, port: url.port ?? (scheme == "https" ? 443 : 80))
    }

    /// The request head: the origin-form target, `Host`, `Accept-Encoding` (unless the
    /// request names one) and `Content-Length` when there is a body. No `Connection` field:
    /// HTTP/1.1 keeps the connection alive by default.
    static func requestHead(for request: TransportRequest, origin: ConnectionPool.Origin, decompresses: Bool) -> HTTPRequestHead {
        var target = request.url.path.isEmpty ? "/" : request.url.path
        if let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false) {
            target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
            if let query = components.percentEncodedQuery { target += "?" + query }
        }
        var headers = HTTPHeaders()
        let defaultPort = origin.isSecure ? 443 : 80
        let host = origin.host.contains(":") ? "[\(origin.host)]" : origin.host
        headers.add(name: "Host", value: origin.port == defaultPort ? host : "\(host):\(origin.port)")
        for field in request.headers { headers.add(name: field.name.rawName, value: field.value) }
        if !headers.contains(name: "Accept-Encoding") {
            // gzip preferred (q=1) over deflate (0.9): NIO's compressor, Spout's, takes deflate
            // when both weigh the same, and gzip is the unambiguous one (RFC 9110, 8.4.1.2).
            headers.add(name: "Accept-Encoding", value: decompresses ? "gzip, deflate;q=0.9" : "identity")
        }
        if let body = request.body { headers.replaceOrAdd(name: "Content-Length", value: String(body.count)) }
        return HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: request.method.rawValue), uri: target, headers: headers)
    }
}
