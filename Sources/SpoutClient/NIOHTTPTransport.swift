#if os(Linux)
import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPCompression
import NIOPosix
import NIOSSL
import Synchronization

/// The ``SpoutTransport`` on Linux: AsyncHTTPClient (HTTP/1.1 over SwiftNIO, TLS through
/// swift-nio-ssl, keep-alive connections pooled per origin, gzip/deflate bodies decoded as
/// they stream).
///
/// Why AsyncHTTPClient and not `URLSession` on Linux: `URLSession.bytes(for:)`, the only way to
/// read a `URLSession` body as it arrives, does not exist in swift-corelibs-foundation; on
/// Linux, `URLSession` hands over a body whole.
///
/// Backpressure is real: AsyncHTTPClient reads the socket only while the body's consumer asks
/// for more (its body sequence buffers one read), and each connection reads at most one socket
/// buffer per read, so a slow consumer stops TCP, and the server, instead of piling bytes up in
/// memory.
///
/// Connections: GETs and HEADs share keep-alive connections per origin, at most
/// `maximumIdleConnectionsPerOrigin` of them (AsyncHTTPClient's per-host limit: a request beyond
/// it waits for one to be free), each closed after `idleTimeout` unused. A body given up before
/// its end closes its connection; so does a response with `Connection: close`. Writes (anything
/// but GET and HEAD) go on a connection of their own, made for them and closed after their
/// answer, so that a connection the server closed while it was idle can never swallow a
/// request that must not be sent twice. Redirects are not followed: a `3xx` is the answer.
///
/// `https` is verified against ``SpoutTLSConfiguration``; a refused certificate is
/// ``SpoutClientError/certificateRejected(_:)``, and an `https` URL never falls back to
/// plain HTTP. Pins are checked on each new connection after its handshake, before
/// AsyncHTTPClient writes a request on it.
public struct NIOHTTPTransport: SpoutTransport {
    private let clients: HTTPClients
    private let connectTimeout: Duration
    private let readTimeout: Duration?
    private let decompresses: Bool
    private let keepsConnections: Bool
    /// The TLS settings, or why they cannot be used (thrown by every `https` request).
    private let trust: Result<TLSTrust, SpoutClientError>

    /// - Parameters:
    ///   - group: where the connections live; by default NIO's shared singleton group.
    ///   - connectTimeout: how long a connection may take to be made, TLS handshake included.
    ///   - readTimeout: how long the server may stay silent while the client waits for the
    ///     response head or for more of the body (``SpoutClientError/timedOut(_:)``); a
    ///     consumer's own pauses do not count. Nil (the default) waits as long as the server
    ///     takes; cancelling the task always stops the wait.
    ///   - tls: how `https` servers are trusted; the system's roots by default.
    ///   - maximumIdleConnectionsPerOrigin: how many keep-alive connections to one origin the
    ///     GETs share (0: none, one connection per exchange, closed after it).
    ///   - idleTimeout: how long a connection waits unused before the client closes it; keep it
    ///     below the server's (Spout's is 60 s, nginx's 75 s).
    ///   - decompresses: send `Accept-Encoding: gzip, deflate` and decode such bodies as they
    ///     arrive (the default); false asks for the identity encoding.
    public init(
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, connectTimeout: Duration = .seconds(10),
        readTimeout: Duration? = nil, tls: SpoutTLSConfiguration = SpoutTLSConfiguration(),
        maximumIdleConnectionsPerOrigin: Int = 4, idleTimeout: Duration = .seconds(30), decompresses: Bool = true
    ) {
        let trust: Result<TLSTrust, SpoutClientError>
        do {
            trust = .success(try TLSTrust(tls))
        } catch let error as SpoutClientError {
            trust = .failure(error)
        } catch {
            trust = .failure(.invalidConfiguration(String(describing: error)))
        }
        self.trust = trust
        self.connectTimeout = connectTimeout
        self.readTimeout = readTimeout
        self.decompresses = decompresses
        self.keepsConnections = maximumIdleConnectionsPerOrigin > 0
        self.clients = HTTPClients(
            group: group, connectTimeout: TimeAmount(connectTimeout), trust: try? trust.get(),
            connectionsPerOrigin: max(1, maximumIdleConnectionsPerOrigin), idleTimeout: TimeAmount(idleTimeout),
            decompresses: decompresses)
    }

    /// How many connections this transport has opened so far (reuse keeps it small).
    public var connectionsOpened: Int { self.clients.connectionsOpened }

    public func perform(_ request: TransportRequest) async throws -> TransportResponse {
        let origin = try Self.origin(of: request.url)
        if origin.isSecure, case .failure(let problem) = self.trust { throw problem }
        let isWrite = request.method != .get && request.method != .head
        var outgoing = HTTPClientRequest(url: request.url.absoluteString)
        outgoing.method = HTTPMethod(rawValue: request.method.rawValue)
        for field in request.headers { outgoing.headers.add(name: field.name.rawName, value: field.value) }
        if !outgoing.headers.contains(name: "Accept-Encoding") {
            // gzip preferred (q=1) over deflate (0.9): NIO's compressor, Spout's, takes deflate
            // when both weigh the same, and gzip is the unambiguous one (RFC 9110, 8.4.1.2).
            outgoing.headers.add(name: "Accept-Encoding", value: self.decompresses ? "gzip, deflate;q=0.9" : "identity")
        }
        if isWrite || !self.keepsConnections { outgoing.headers.replaceOrAdd(name: "Connection", value: "close") }
        if let stream = request.bodyStream {
            outgoing.body = .stream(StreamedBody(stream: stream), length: .unknown)
        } else if let body = request.body {
            outgoing.body = .bytes(ByteBuffer(bytes: body))
        }
        // The head's wait: the connection (its own timeout inside), then the server's silence.
        let deadline = self.readTimeout.map { NIODeadline.now() + TimeAmount(self.connectTimeout + $0) } ?? .distantFuture
        let response: HTTPClientResponse
        do {
            response = try await (isWrite ? self.clients.writes : self.clients.reads).execute(outgoing, deadline: deadline)
        } catch {
            request.bodyStream?.cancel()
            // A cancelled task's failure is its cancellation, not an outage (the stale policy
            // must not answer it).
            try Task.checkCancellation()
            throw Self.headFailure(error, origin: origin, readTimeout: self.readTimeout)
        }
        return TransportResponse(
            status: Int(response.status.code), headers: HTTPFields(response.headers),
            body: HTTPClientBody(response.body, clients: self.clients, readTimeout: self.readTimeout))
    }

    /// Where a request goes: scheme, host (lowercase, without an IPv6 literal's brackets) and port.
    struct Origin: Sendable {
        var scheme: String
        var host: String
        var port: Int

        var isSecure: Bool { self.scheme == "https" }
    }

    /// The origin of an `http` or `https` URL; anything else is
    /// ``SpoutClientError/invalidURL(_:)``.
    static func origin(of url: URL) throws -> Origin {
        let scheme = url.scheme?.lowercased() ?? ""
        guard scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty else {
            throw SpoutClientError.invalidURL("\(url.absoluteString): only http:// and https:// URLs")
        }
        let bareHost = (host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host).lowercased()
        return Origin(scheme: scheme, host: bareHost, port: url.port ?? (scheme == "https" ? 443 : 80))
    }

    /// Why no response head came, as the client reports it: a refused certificate, a silent
    /// server (with a read timeout), or no connection.
    static func headFailure(_ error: any Error, origin: Origin, readTimeout: Duration?) -> SpoutClientError {
        if let error = error as? SpoutClientError { return error }
        let place = "\(origin.host):\(origin.port)"
        if let tls = TLSTrust.classify(error, host: origin.host) { return tls }
        if let error = error as? HTTPClientError {
            if error == .deadlineExceeded, let readTimeout {
                return .timedOut("no response head within \(readTimeout.wholeMilliseconds) ms")
            }
            if error == .connectTimeout { return .connectionFailed("\(place): no connection within the connect timeout") }
        }
        return .connectionFailed("\(place): \(error)")
    }
}

/// A ``SpoutBodyStream`` as AsyncHTTPClient sends a streamed body: its bytes in buffers.
/// AsyncHTTPClient asks for the next one only when the connection has taken the last, and
/// stops asking when the server answers an error before the body's end.
private struct StreamedBody: AsyncSequence, Sendable {
    let stream: SpoutBodyStream

    struct AsyncIterator: AsyncIteratorProtocol {
        var wrapped: SpoutBodyStream.AsyncIterator

        mutating func next() async throws -> ByteBuffer? {
            try await self.wrapped.next().map { ByteBuffer(bytes: $0) }
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(wrapped: self.stream.makeAsyncIterator())
    }
}

/// The AsyncHTTPClient clients of one ``NIOHTTPTransport`` (one for GETs and HEADs, one for
/// writes), shut down when the last copy of the transport and the last body read through them
/// are gone; and the count of the connections they opened.
final class HTTPClients: Sendable {
    let reads: HTTPClient
    let writes: HTTPClient
    private let opened: ConnectionCounter

    init(
        group: any EventLoopGroup, connectTimeout: TimeAmount, trust: TLSTrust?, connectionsPerOrigin: Int, idleTimeout: TimeAmount,
        decompresses: Bool
    ) {
        let opened = ConnectionCounter()
        self.opened = opened
        var pool = HTTPClient.Configuration.ConnectionPool(
            idleTimeout: idleTimeout, concurrentHTTP1ConnectionsPerHostSoftLimit: connectionsPerOrigin)
        // A connection that cannot be made fails its request at once (the client's retry
        // policy decides about another attempt), and a refused pin is final.
        pool.retryConnectionEstablishment = false
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: trust?.configuration, redirectConfiguration: .disallow, timeout: .init(connect: connectTimeout),
            connectionPool: pool, decompression: decompresses ? .enabled(limit: .none) : .disabled,
            http1_1ConnectionDebugInitializer: { channel in Self.prepare(channel, trust: trust, opened: opened) })
        configuration.httpVersion = .http1Only
        self.reads = HTTPClient(eventLoopGroup: group, configuration: configuration)
        self.writes = HTTPClient(eventLoopGroup: group, configuration: configuration)
    }

    deinit {
        self.reads.shutdown { _ in }
        self.writes.shutdown { _ in }
    }

    var connectionsOpened: Int { self.opened.count.load(ordering: .relaxed) }

    /// Runs for each new connection once it is made (its TLS handshake completed, the chain and
    /// the host verified), before a request is written on it: counts it, makes it read one
    /// socket buffer per read (a compressed read expands about tenfold for Spout's JSON, and
    /// all of a read is handed over at once), and checks the pins. A refused pin fails the
    /// connection, and with it the requests waiting for it, with
    /// ``SpoutClientError/certificateRejected(_:)``; the connection is closed after that.
    private static func prepare(_ channel: any Channel, trust: TLSTrust?, opened: ConnectionCounter) -> EventLoopFuture<Void> {
        opened.count.add(1, ordering: .relaxed)
        return channel.eventLoop.submit {
            try channel.syncOptions?.setOption(ChannelOptions.maxMessagesPerRead, value: 1)
            guard let trust, (try? channel.pipeline.syncOperations.handler(type: NIOSSLClientHandler.self)) != nil else { return }
            let host = channel.remoteAddress.map { "the server at \($0.ipAddress ?? "?"):\($0.port ?? 0)" } ?? "the server"
            if let refusal = trust.pinRefusal(on: channel, host: host) {
                // After AsyncHTTPClient has taken the failure: it then ignores the close.
                channel.eventLoop.execute { channel.close(promise: nil) }
                throw refusal
            }
        }
    }
}

/// How many connections a transport opened.
final class ConnectionCounter: Sendable {
    let count = Atomic<Int>(0)
}

/// A response body read through AsyncHTTPClient: each ``nextChunk()`` takes the next buffer
/// of its body sequence, which reads the socket when nothing is buffered.
///
/// Releasing the reader or calling ``close()`` before the end gives the body up
/// (AsyncHTTPClient closes its connection); so does cancelling the reading task, which then
/// throws `CancellationError`. With a read timeout, a ``nextChunk()`` that waits longer than it
/// for the server throws ``SpoutClientError/timedOut(_:)`` and gives the body up; the time
/// between two calls (the consumer's own) is never counted.
final class HTTPClientBody: ResponseBodyReader {
    /// The body's iterator, out of ``state`` while a ``nextChunk()`` uses it.
    private final class Iterator: @unchecked Sendable {
        // Unchecked: only the one reader that took it out of `state` uses it (a body has one
        // consumer at a time, as ResponseBodyReader's contract says), and `state`'s lock
        // orders the hand-overs.
        var wrapped: HTTPClientResponse.Body.AsyncIterator
        init(_ wrapped: HTTPClientResponse.Body.AsyncIterator) { self.wrapped = wrapped }
    }

    private struct State {
        var iterator: Iterator?
        var reading = false
        var closed = false
    }

    private let body: Mutex<HTTPClientResponse.Body?>
    private let state: Mutex<State>
    private let receivedTrailers = Mutex(HTTPFields())
    /// Keeps the clients running while the body is read, whatever became of the transport.
    private let clients: HTTPClients
    private let readTimeout: Duration?

    var trailers: HTTPFields { self.receivedTrailers.withLock { $0 } }

    init(_ body: HTTPClientResponse.Body, clients: HTTPClients, readTimeout: Duration?) {
        self.body = Mutex(body)
        self.state = Mutex(State(iterator: Iterator(body.makeAsyncIterator())))
        self.clients = clients
        self.readTimeout = readTimeout
    }

    func nextChunk() async throws -> [UInt8]? {
        let taken = self.state.withLock { state -> Iterator?? in
            guard !state.closed else { return .some(nil) }
            guard let iterator = state.iterator, !state.reading else { return nil }
            state.reading = true
            return .some(iterator)
        }
        guard let taken else { throw SpoutClientError.truncatedBody }
        guard let iterator = taken else { return nil }
        let buffer: ByteBuffer?
        do {
            buffer = try await self.next(iterator)
        } catch {
            self.close()
            try Task.checkCancellation()
            throw Self.bodyFailure(error)
        }
        let stillOpen = self.state.withLock { state -> Bool in
            state.reading = false
            if state.closed { state.iterator = nil }
            return !state.closed
        }
        guard stillOpen else { return nil }
        guard let buffer else {
            self.receivedTrailers.withLock { $0 = HTTPFields(self.body.withLock { $0?.trailers } ?? [:]) }
            self.close()
            return nil
        }
        return Array(buffer.readableBytesView)
    }

    func close() {
        self.state.withLock { state in
            state.closed = true
            if !state.reading { state.iterator = nil }
        }
        self.body.withLock { $0 = nil }
    }

    /// The next non-empty buffer, nil at the body's end; within the read timeout when there is one.
    private func next(_ iterator: Iterator) async throws -> ByteBuffer? {
        guard let readTimeout = self.readTimeout else { return try await Self.nextNonEmpty(iterator) }
        return try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
            group.addTask { try await Self.nextNonEmpty(iterator) }
            group.addTask {
                try await Task.sleep(for: readTimeout)
                throw SpoutClientError.timedOut("no next bytes of the body within \(readTimeout.wholeMilliseconds) ms")
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }

    private static func nextNonEmpty(_ iterator: Iterator) async throws -> ByteBuffer? {
        while let buffer = try await iterator.wrapped.next() {
            if buffer.readableBytes > 0 { return buffer }
        }
        return nil
    }

    /// A failure after the head: the connection closed before the body's end (or its framing
    /// broke) is ``SpoutClientError/truncatedBody``; a compressed body that does not decode is
    /// ``SpoutClientError/malformedBody(_:)``.
    static func bodyFailure(_ error: any Error) -> SpoutClientError {
        if let error = error as? SpoutClientError { return error }
        if error is NIOHTTPDecompression.DecompressionError || error is NIOHTTPDecompression.ExtraDecompressionError {
            return .malformedBody("the compressed body could not be decoded: \(error)")
        }
        return .truncatedBody
    }
}

extension Duration {
    /// The whole milliseconds of this duration, for messages.
    var wholeMilliseconds: Int64 { self.components.seconds * 1000 + self.components.attoseconds / 1_000_000_000_000_000 }
}
#endif
