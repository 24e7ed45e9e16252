import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOExtras
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import SpoutCore
import Synchronization
import Tracing

/// An HTTP/1.1 server for a ``Router``: keep-alive, pipelining, compression, row streams with
/// backpressure, access logging and graceful shutdown.
///
/// ```swift
/// let server = HTTPServer(router: router, configuration: .init(port: 0), logger: logger)
/// try await server.start()
/// print(server.boundPort!)
/// // elsewhere, on SIGTERM: await server.shutdown()
/// try await server.run()   // returns once shut down
/// ```
///
/// Built in, unless the router has it: `GET /health` (200 `{"status":"ok"}`). The server knows
/// no database: whatever composes it with databases registers `GET /ready` and `GET /metrics`
/// (SpoutEndpoints' `Router.addReadiness(of:)` and `Router.addMetrics(_:databaseMetrics:databases:)`).
public final class HTTPServer: Service {
    public let configuration: ServerConfiguration
    public let statistics = ServerStatistics()
    private let router: Router
    private let logger: Logger
    private let group: any EventLoopGroup
    private let ownsGroup: Bool
    private let state = Mutex(ServerState())
    private let stopped = AsyncOneShotEvent()
    private let requestTasks = RequestTasks()
    /// The request bodies all connections hold (``ServerConfiguration/maximumBufferedBodyBytes``).
    let bodyBudget: RequestBodyBudget
    /// Collects the accepted connections and quiesces them on shutdown; dropped there, before
    /// an owned event loop group shuts down (its deinit completes a promise on that group).
    private let quiescing: NIOLockedValueBox<ServerQuiescingHelper?>
    private let connectionFailures: ConnectionFailureLog
    private let metrics: ServerMetrics?
    private let tracer: (any Tracer)?
    private let streams: StreamServices
    /// ``ServerConfiguration/maximumConnections``, or the automatic limit when that is 0.
    public let maximumConnections: Int

    private struct ServerState {
        var serverChannel: (any Channel)?
        var connections: [ObjectIdentifier: any Channel] = [:]
        /// Open connections per client address (for the per-address cap).
        var connectionsByAddress: [String: Int] = [:]
        var isShuttingDown = false
        var isStarted = false
    }

    /// - Parameters:
    ///   - router: the routes; copied (later changes to the caller's router have no effect).
    ///   - eventLoopGroup: a group to run on; nil creates one the server shuts down with itself.
    ///   - metrics: where this server records its requests; nil for none. Serving them is a
    ///     route of the router's.
    ///   - tracer: what starts a span for each request (``RequestSpan``); nil: no spans (the
    ///     W3C trace context is still continued and answered, ``RequestTrace``).
    ///   - reservedFileDescriptors: descriptors the process needs besides client connections
    ///     (database connections, say), kept out of the automatic connection limit.
    public init(
        router: Router,
        configuration: ServerConfiguration = ServerConfiguration(),
        logger: Logger = Logger(label: "spout.http"),
        eventLoopGroup: (any EventLoopGroup)? = nil,
        metrics: ServerMetrics? = nil,
        tracer: (any Tracer)? = nil,
        reservedFileDescriptors: Int = 0
    ) {
        self.tracer = tracer
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
        self.connectionFailures = ConnectionFailureLog(logger: logger)
        self.bodyBudget = RequestBodyBudget(limit: configuration.maximumBufferedBodyBytes)
        let streamMetrics = metrics.map { StreamMetrics(registry: $0.registry) }
        self.streams = StreamServices(
            spool: configuration.spool.isEnabled ? SpoolService(configuration: configuration.spool, logger: logger, metrics: streamMetrics) : nil,
            admission: StreamAdmission(limit: configuration.maximumStreamsPerAddress), metrics: streamMetrics)
        var router = router
        Self.addBuiltInRoutes(to: &router)
        self.router = router
        if let eventLoopGroup {
            self.group = eventLoopGroup
            self.ownsGroup = false
        } else {
            self.group = MultiThreadedEventLoopGroup(numberOfThreads: configuration.eventLoopThreads ?? System.coreCount)
            self.ownsGroup = true
        }
        self.quiescing = NIOLockedValueBox(ServerQuiescingHelper(group: self.group))
        if configuration.maximumConnections > 0 {
            self.maximumConnections = configuration.maximumConnections
        } else {
            // Automatic: as many as the descriptors allow once the soft limit is raised, less
            // those the process needs otherwise (its files, and what the caller reserved).
            OpenFileLimit.raiseSoftLimitToHardLimit()
            self.maximumConnections = OpenFileLimit.automaticConnectionLimit(reserved: 128 + reservedFileDescriptors)
        }
    }

    /// Request tasks started and not yet ended (for tests and diagnostics): zero once
    /// ``shutdown(drainTimeout:)`` has returned, unless a task outlived its grace.
    public var runningRequestTasks: Int {
        self.requestTasks.running
    }

    /// The port the server listens on, once started (the real one when configured with 0).
    public var boundPort: Int? {
        self.state.withLock { $0.serverChannel?.localAddress?.port }
    }

    /// Binds and starts accepting connections. Call once.
    /// - Throws: ``ListenError`` when the address cannot be bound (a port in use, say).
    public func start() async throws {
        let alreadyStarted = self.state.withLock { state in
            defer { state.isStarted = true }
            return state.isStarted
        }
        precondition(!alreadyStarted, "HTTPServer.start() called twice")
        self.streams.spool?.start()
        let environment = ConnectionEnvironment(
            router: self.router, configuration: self.configuration,
            logger: self.logger, statistics: self.statistics, metrics: self.metrics, streams: self.streams,
            tracer: self.tracer, requestTasks: self.requestTasks, bodyBudget: self.bodyBudget
        )
        let configuration = self.configuration
        let failures = self.connectionFailures
        guard let quiescing = self.quiescing.withLockedValue({ $0 }) else {
            throw HTTPServerShutDown()
        }
        // Socket options of accepted connections are set in `initialize`, where a failure is
        // logged, not here: NIO closes a connection whose child option fails and reports it
        // only past the end of the listening channel's pipeline, so nobody would hear of it.
        // TCP_NODELAY needs nothing: NIO sets it on the listening socket, and Linux hands it
        // down to every accepted one.
        let bootstrap = ServerBootstrap(group: self.group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(quiescing.makeServerChannelHandler(channel: channel))
                    try channel.pipeline.syncOperations.addHandler(AcceptErrorHandler(failures: failures))
                }
            }
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelOption(
                .writeBufferWaterMark,
                value: .init(low: configuration.writeBufferLowWatermark, high: configuration.writeBufferHighWatermark)
            )
            .childChannelInitializer { [weak self] channel in
                guard let self else { return channel.close() }
                return channel.eventLoop.makeCompletedFuture {
                    do {
                        try self.initialize(channel, environment: environment)
                    } catch {
                        self.connectionFailures.record(error, stage: "setup")
                        throw error
                    }
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.bind(host: configuration.host, port: configuration.port).get()
        } catch {
            throw ListenError(host: configuration.host, port: configuration.port, underlying: error)
        }
        self.state.withLock { $0.serverChannel = channel }
        self.logger.info(
            "listening",
            metadata: [
                "http.host": .string(configuration.host), "http.port": .stringConvertible(channel.localAddress?.port ?? 0),
                "limits.connections": .stringConvertible(self.maximumConnections),
                "limits.connections_per_address": .stringConvertible(configuration.maximumConnectionsPerAddress),
                "limits.streams_per_address": .stringConvertible(configuration.maximumStreamsPerAddress),
                "spool.directory": .string(configuration.spool.isEnabled ? configuration.spool.resolvedDirectory : "off"),
            ]
        )
    }

    /// Starts the server if needed and returns once ``shutdown(drainTimeout:)`` has finished.
    /// As a swift-service-lifecycle `Service`, the group's graceful shutdown (SIGTERM, say)
    /// starts that shutdown, with the configured ``ServerConfiguration/drainTimeout``.
    public func run() async throws {
        let started = self.state.withLock { $0.isStarted }
        if !started { try await self.start() }
        await withGracefulShutdownHandler {
            await self.stopped.wait()
        } onGracefulShutdown: {
            Task { await self.shutdown() }
        }
    }

    /// How long shutdown waits, after closing the last connections, for their request tasks
    /// to end before it stops the event loops they run on.
    static let requestTaskGrace: Duration = .seconds(5)

    /// Stops accepting, lets in-flight responses finish for up to `drainTimeout` (default:
    /// ``ServerConfiguration/drainTimeout``), then closes every connection (cancelling running
    /// statements), waits for their request tasks to end (at most ``requestTaskGrace``) and
    /// releases the server's threads. Idle keep-alive connections close at once. Later calls
    /// return when the first one is done.
    public func shutdown(drainTimeout: Duration? = nil) async {
        let (first, connections) = self.state.withLock { state in
            defer { state.isShuttingDown = true }
            return (!state.isShuttingDown, state.connections.count)
        }
        guard first else {
            await self.stopped.wait()
            return
        }
        self.logger.info("shutting down", metadata: ["connections": .stringConvertible(connections)])
        // Closes the listening socket, sends every open connection `ChannelShouldQuiesceEvent`
        // (an idle one closes, a busy one after its response) and reports when all are closed.
        if let helper = self.quiescing.withLockedValue({ helper in
            defer { helper = nil }
            return helper
        }) {
            await Self.quiesce(helper, on: self.group.next(), atMost: drainTimeout ?? self.configuration.drainTimeout)
        }
        let remaining = self.state.withLock { Array($0.connections.values) }
        for connection in remaining {
            try? await connection.close()
        }
        // A closed connection's producer stops at its next write (its statement cancelled);
        // its task then resumes on the event loop, which must still run (``RequestTasks``).
        if !(await self.requestTasks.waitUntilNone(atMost: Self.requestTaskGrace)) {
            self.logger.warning(
                "request tasks still running; stopping the event loops anyway",
                metadata: ["tasks": .stringConvertible(self.requestTasks.running)])
        }
        await self.streams.spool?.shutdown()
        if self.ownsGroup {
            try? await self.group.shutdownGracefully()
        }
        self.logger.info("stopped", metadata: ["connections.forced": .stringConvertible(remaining.count)])
        self.stopped.set()
    }

    /// Quiesces the connections `helper` collected; returns once all are closed, or when
    /// `timeout` has passed.
    private static func quiesce(_ helper: ServerQuiescingHelper, on loop: any EventLoop, atMost timeout: Duration) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumed = NIOLockedValueBox(false)
            let resume: @Sendable () -> Void = {
                let first = resumed.withLockedValue { resumed in
                    defer { resumed = true }
                    return !resumed
                }
                if first { continuation.resume() }
            }
            let drained = loop.makePromise(of: Void.self)
            // Also completes (failed) when the server never started: nothing to drain.
            drained.futureResult.whenComplete { _ in resume() }
            loop.scheduleTask(in: .nanoseconds(timeout.wholeNanoseconds)) { resume() }
            helper.initiateShutdown(promise: drained)
        }
    }

    private func initialize(_ channel: any Channel, environment: ConnectionEnvironment) throws {
        // Only options an unprivileged process may set (SOL_SOCKET's SO_SNDBUF is one; a
        // TCP-level option must be `.tcpOption`, never `.socketOption`).
        if let size = self.configuration.socketSendBufferSize {
            try channel.syncOptions?.setOption(.socketOption(.so_sndbuf), value: SocketOptionValue(size))
        }
        for option in self.configuration.additionalSocketOptions {
            try channel.syncOptions?.setOption(
                ChannelOptions.Types.SocketOption(
                    level: NIOBSDSocket.OptionLevel(rawValue: option.level), name: NIOBSDSocket.Option(rawValue: option.name)),
                value: SocketOptionValue(option.value))
        }
        let open = self.statistics.connectionOpened()
        let identifier = ObjectIdentifier(channel)
        let perAddressCap = self.configuration.maximumConnectionsPerAddress
        let address = channel.remoteAddress?.ipAddress ?? ""
        let capped = perAddressCap > 0 && !self.configuration.trustedProxies.contains(address)
        enum Admission { case accepted, shuttingDown, addressFull }
        let admission = self.state.withLock { state -> Admission in
            guard !state.isShuttingDown else { return .shuttingDown }
            if capped {
                let count = state.connectionsByAddress[address, default: 0]
                guard count < perAddressCap else { return .addressFull }
                state.connectionsByAddress[address] = count + 1
            }
            state.connections[identifier] = channel
            return .accepted
        }
        channel.closeFuture.whenComplete { [weak self] _ in
            self?.statistics.connectionClosed()
            self?.state.withLock { state in
                guard state.connections.removeValue(forKey: identifier) != nil, capped else { return }
                let remaining = state.connectionsByAddress[address, default: 1] - 1
                state.connectionsByAddress[address] = remaining > 0 ? remaining : nil
            }
        }
        guard admission == .accepted, open <= self.maximumConnections else {
            self.statistics.connectionRejected()
            let message = admission == .addressFull ? "too many connections from this address" : "too many connections"
            try Self.refuse(channel, message: message)
            return
        }
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderListSize = environment.configuration.maximumHeadSize
        limits.maxHeaderFieldSize = environment.configuration.maximumHeadSize
        let sync = channel.pipeline.syncOperations
        let arrival = RequestArrivalClock()
        try sync.addHandler(RequestArrivalObserver(clock: arrival))
        // No outbound header validation: every head and trailer this server writes is made
        // from `HTTPFields`, whose names are checked when made and whose values are legalized
        // (`HTTPField(name:value:)`), so NIO's validator would check each field a second time.
        // No pipelining assistance either: the connection handler keeps pipelined requests in
        // order itself (`PipelinedRequests`), without a handler every part passes through.
        try sync.configureHTTPServerPipeline(
            withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
            withEncoderConfiguration: .init(), withDecoderLimitConfiguration: limits
        )
        try sync.addHandler(HTTPConnectionHandler(environment: environment, arrival: arrival))
    }

    /// Answers a connection refused at accept with a 503 (JSON, `Retry-After: 1`) before
    /// reading anything from it, framed by NIOHTTP1's encoder, then closes it.
    private static func refuse(_ channel: any Channel, message: String) throws {
        let response = ErrorResponse(status: .serviceUnavailable, message: message, headers: [.retryAfter: "1"])
        let (head, body) = response.closingParts(allocator: channel.allocator)
        try channel.pipeline.syncOperations.addHandler(HTTPResponseEncoder())
        channel.write(HTTPServerResponsePart.head(head), promise: nil)
        channel.write(HTTPServerResponsePart.body(.byteBuffer(body)), promise: nil)
        channel.writeAndFlush(HTTPServerResponsePart.end(nil)).whenComplete { _ in channel.close(promise: nil) }
    }

    private static func addBuiltInRoutes(to router: inout Router) {
        if case .notFound = router.match(.get, path: "/health") {
            router.add(.get, "/health", summary: "Liveness: 200 while the process serves requests.") { _ in
                Response.bytes(Array(#"{"status":"ok"}"#.utf8), contentType: "application/json")
            }
        }
    }
}

/// ``HTTPServer/start()`` after ``HTTPServer/shutdown(drainTimeout:)``.
struct HTTPServerShutDown: Error, CustomStringConvertible {
    var description: String { "the server has been shut down" }
}
