import NIOCore
import NIOHTTP1

/// HTTP/1.1 pipelining and the server's shutdown for ``HTTPConnectionHandler``: requests that
/// arrive while one is answered wait in ``PipelinedRequests`` and are taken up, in order, as
/// each response ends; on shutdown the request under way is the connection's last. (NIO's
/// `HTTPServerPipelineHandler` did this from its own place in the pipeline, which every part of
/// every request and response passed through, and turned the socket's read interest off and on
/// around each request.)
extension HTTPConnectionHandler {
    /// Whether `arrival`, just delivered by the parser, must wait rather than be taken now: a
    /// request is being answered (its whole head and body have arrived), or earlier arrivals
    /// wait. Held in order then; dropped when the connection is closing. True when it was held
    /// or dropped.
    func heldBack(_ arrival: PipelinedRequests.Arrival) -> Bool {
        guard self.isAnsweringOrClosing || !self.pipelined.isEmpty else { return false }
        if case .closing = self.state { return true }
        self.pipelined.hold(arrival)
        return true
    }

    /// Reads go on while a response is written, unless pipelined arrivals wait to be taken up
    /// or a streamed body's consumer is behind (then the read waits), or the connection is
    /// closing.
    func read(context: ChannelHandlerContext) {
        if case .closing = self.state { return }
        guard self.pipelined.isEmpty && !self.streamedBodyPausesReads() else {
            self.pipelined.readIsWaiting = true
            return
        }
        context.read()
    }

    /// Takes up what arrived while the last response was written, until a request is being
    /// answered again (or the connection closes); then passes on a read that waited for it. A
    /// response that ends at once (a 404) comes back here from ``receive(_:context:)``; the
    /// `while` loop, not recursion, takes up the next request.
    func takeUpPipelined(context: ChannelHandlerContext) {
        guard !self.isTakingUpPipelined else { return }
        self.isTakingUpPipelined = true
        defer { self.isTakingUpPipelined = false }
        while !self.isAnsweringOrClosing, let arrival = self.pipelined.takeFirst() {
            switch arrival {
            case .part(let part): self.receive(part, context: context)
            case .parserError(let error): self.refuse(error, context: context)
            }
        }
        if self.pipelined.isEmpty && self.pipelined.readIsWaiting {
            self.pipelined.readIsWaiting = false
            if case .closing = self.state { return }
            context.read()
        }
    }

    /// A request is being answered or the connection is closing: nothing more is taken up now.
    private var isAnsweringOrClosing: Bool {
        switch self.state {
        case .responding, .closing: true
        case .idle, .receiving: false
        }
    }

    /// The server is shutting down (`ServerQuiescingHelper`): an idle connection closes now; one
    /// with a request under way answers it with `Connection: close` (when its head has not gone
    /// yet) and closes after its end. Requests pipelined behind it are dropped unanswered, as
    /// on any close, for the client to send again.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        self.pipelined.drop()
        switch self.state {
        case .idle:
            self.state = .closing
            context.close(promise: nil)
        case .receiving(_, _, let exchange), .responding(let exchange):
            exchange.keepAlive = false
        case .closing:
            break
        }
    }
}
