import NIOCore

/// When the bytes of the request being received started to arrive; shared by the
/// ``RequestArrivalObserver`` (which sees raw bytes) and the ``HTTPConnectionHandler`` (which
/// sees decoded requests and enforces the request-head timeout from it).
///
/// Confined to the connection's event loop: both handlers run there, and nothing else holds it.
final class RequestArrivalClock {
    /// The first byte of the request head being received, or nil when none is (between
    /// requests, once a head is complete, while a response is written). A new connection starts
    /// with its accept time: its first request head is due within the head timeout of connecting.
    var requestBytesSince: NIODeadline?

    init(now: NIODeadline = .now()) {
        self.requestBytesSince = now
    }

    /// A request head has been decoded, or a response has ended: nothing pending.
    func reset() {
        self.requestBytesSince = nil
    }
}

/// Sits in front of the HTTP decoder and notes when the bytes of a new request begin, so a
/// client that trickles a request head (slowloris) is cut off by the head timeout however
/// slowly it sends. Passes everything on unchanged; costs one comparison per read.
final class RequestArrivalObserver: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let clock: RequestArrivalClock

    init(clock: RequestArrivalClock) {
        self.clock = clock
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if self.clock.requestBytesSince == nil {
            self.clock.requestBytesSince = .now()
        }
        context.fireChannelRead(data)
    }
}
