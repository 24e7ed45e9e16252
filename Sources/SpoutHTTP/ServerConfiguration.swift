/// Limits and settings of an ``HTTPServer``; every field has a sane default.
public struct ServerConfiguration: Sendable, Hashable {
    /// The address to bind (`127.0.0.1`, `0.0.0.0`, `::`).
    public var host: String
    /// The port to bind; 0 picks a free one (read it from ``HTTPServer/boundPort``).
    public var port: Int
    /// Event-loop threads; nil uses one per core.
    public var eventLoopThreads: Int?
    /// Largest request head (request line and header fields); larger is 431.
    public var maximumHeadSize: Int
    /// Largest request body; larger is 413 and the connection closes.
    public var maximumBodySize: Int
    /// Most bytes of request bodies held in memory at once, all connections together; a
    /// request that would pass it is 503 with `Retry-After` before its body is read (see
    /// ``RequestBodyBudget``). 0: no limit.
    public var maximumBufferedBodyBytes: Int = 256 * 1024 * 1024
    /// A connection with no request in progress is closed after this long.
    public var idleTimeout: Duration
    /// Connections beyond this many are answered 503 and closed right after accept. 0: automatic
    /// (``HTTPServer`` raises the open-file soft limit to the hard limit and allows what the
    /// descriptors allow, at most ``OpenFileLimit/automaticCeiling``).
    public var maximumConnections: Int
    /// How long ``HTTPServer/shutdown(drainTimeout:)`` lets in-flight responses finish by default.
    public var drainTimeout: Duration
    /// Chunks a stream may hand to the event loop before the producer waits for them to be written.
    public var chunksInFlight: Int
    /// The channel's write-buffer watermarks: a stream pauses above `high` and resumes below `low`.
    public var writeBufferLowWatermark: Int
    public var writeBufferHighWatermark: Int
    /// Compress response bodies (zstd, gzip or deflate: ``ContentCoding``) when the client's
    /// `Accept-Encoding` allows.
    public var compression: Bool
    /// `SO_SNDBUF` of accepted connections; nil keeps the kernel's default. Linux grows a
    /// socket's send buffer up to `net.ipv4.tcp_wmem`'s maximum (MiBs), which a slow client
    /// fills before the stream pauses; a smaller value bounds that kernel memory per client.
    public var socketSendBufferSize: Int?
    /// Cross-origin access for browsers; off by default (see ``CORSPolicy``).
    public var cors: CORSPolicy
    /// A request head must be complete within this time of its first byte (a connection's
    /// first head: of the accept); otherwise the connection is closed (slowloris).
    public var requestHeadTimeout: Duration
    /// A request body must be complete within this time of its head; otherwise 408 and close.
    /// A body its route streams (``Route/streamsBody``) has no such deadline, being of any
    /// size: each wait for its next bytes is bounded by this time instead.
    public var requestBodyTimeout: Duration
    /// Connections one client address may hold open at once; more are answered 503 and closed
    /// (0: no cap). Counted by the socket's peer address: `X-Forwarded-For` is never trusted
    /// for it. Addresses in ``trustedProxies`` are exempt.
    public var maximumConnectionsPerAddress: Int
    /// Peer addresses (`10.0.0.5`, `::1`) of reverse proxies in front of the server: many
    /// clients share their connections, so the per-address cap does not apply to them (the
    /// proxy must enforce its own per-client limits).
    public var trustedProxies: [String]
    /// Streamed responses one client address may have at once (0: no cap); more are answered
    /// 429 with `Retry-After`. A stream counts until its last byte is sent, spooled or not.
    /// Behind a proxy in ``trustedProxies`` the client is the nearest untrusted address in
    /// `X-Forwarded-For` (see ``StreamAdmission``).
    public var maximumStreamsPerAddress: Int = 16
    /// Where streams whose client falls behind spool, and how much (see ``SpoolConfiguration``).
    public var spool = SpoolConfiguration()
    /// Whether row responses sent whole carry a `Server-Timing` header: the wait for a
    /// connection (`acquire`), the database (`db`) and the encoding (`encode`), in ms.
    public var timingHeader: Bool = false
    /// Raw `setsockopt` calls made on every accepted connection after ``socketSendBufferSize``.
    /// Not configurable by users: the tests use it to make connection setup fail and check that
    /// the failure is logged.
    var additionalSocketOptions: [RawSocketOption] = []

    /// A `setsockopt(level, name, value)` call, for ``additionalSocketOptions``.
    struct RawSocketOption: Sendable, Hashable {
        var level: Int32
        var name: Int32
        var value: Int32
    }

    public init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        eventLoopThreads: Int? = nil,
        maximumHeadSize: Int = 16 * 1024,
        maximumBodySize: Int = 1024 * 1024,
        idleTimeout: Duration = .seconds(60),
        maximumConnections: Int = 1024,
        drainTimeout: Duration = .seconds(10),
        chunksInFlight: Int = 2,
        writeBufferLowWatermark: Int = 32 * 1024,
        writeBufferHighWatermark: Int = 64 * 1024,
        compression: Bool = true,
        socketSendBufferSize: Int? = nil,
        cors: CORSPolicy = CORSPolicy(),
        requestHeadTimeout: Duration = .seconds(10),
        requestBodyTimeout: Duration = .seconds(30),
        maximumConnectionsPerAddress: Int = 32,
        trustedProxies: [String] = []
    ) {
        self.host = host
        self.port = port
        self.eventLoopThreads = eventLoopThreads
        self.maximumHeadSize = maximumHeadSize
        self.maximumBodySize = maximumBodySize
        self.idleTimeout = idleTimeout
        self.maximumConnections = max(0, maximumConnections)
        self.drainTimeout = drainTimeout
        self.chunksInFlight = max(1, chunksInFlight)
        self.writeBufferLowWatermark = writeBufferLowWatermark
        self.writeBufferHighWatermark = max(writeBufferHighWatermark, writeBufferLowWatermark + 1)
        self.compression = compression
        self.socketSendBufferSize = socketSendBufferSize
        self.cors = cors
        self.requestHeadTimeout = requestHeadTimeout
        self.requestBodyTimeout = requestBodyTimeout
        self.maximumConnectionsPerAddress = max(0, maximumConnectionsPerAddress)
        self.trustedProxies = trustedProxies
    }
}
