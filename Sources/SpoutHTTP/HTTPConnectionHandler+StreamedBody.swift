import NIOCore
import NIOHTTP1

/// Requests whose route streams its body (``Route/streamsBody``), for ``HTTPConnectionHandler``:
/// dispatched as soon as the head has arrived, their body handed to the handler through a
/// ``RequestBodyStream`` piece by piece, with the socket's reads held while the consumer is
/// behind. The body is neither limited in size nor counted in the ``RequestBodyBudget``: it is
/// never held whole. A response that ends before the body's end closes the connection (the
/// rest is not read).
extension HTTPConnectionHandler {
    /// Starts the exchange of a request whose route streams its body: meets its expectation
    /// (`100 Continue`), then dispatches it with the stream its body will arrive through.
    func startStreamingBody(head: HTTPRequestHead, exchange: InFlightRequest, context: ChannelHandlerContext) {
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let eventLoop = context.eventLoop
        let stream = RequestBodyStream(
            patience: self.environment.configuration.requestBodyTimeout,
            resume: { eventLoop.execute { handler.value.resumeStreamedBodyReads() } })
        exchange.receivingBody = stream
        self.state = .responding(exchange)
        self.meetExpectation(of: exchange, context: context)
        // An expectation refused was answered (and the connection closes).
        guard case .responding(let current) = self.state, current === exchange else { return }
        self.dispatch(head: head, body: context.channel.allocator.buffer(capacity: 0), exchange: exchange, context: context, bodyStream: stream)
    }

    /// Hands `part` to the body being streamed in, if any: true when it took it.
    func receiveStreamedBody(_ part: HTTPServerRequestPart) -> Bool {
        guard case .responding(let exchange) = self.state, let stream = exchange.receivingBody else { return false }
        switch part {
        case .body(let chunk):
            stream.append(Array(chunk.readableBytesView))
        case .end:
            exchange.receivingBody = nil
            stream.finish()
        case .head:
            // The parser delivers a body's end before the next head: not reached.
            return false
        }
        return true
    }

    /// The body being streamed in, if any, will not end (the client went away, or sent what
    /// the parser cannot read): its consumer's next read fails with
    /// ``RequestBodyStream/Failure/clientGone``, and the connection closes after the answer.
    func failStreamedBody() {
        guard case .responding(let exchange) = self.state, let stream = exchange.receivingBody else { return }
        exchange.receivingBody = nil
        exchange.keepAlive = false
        stream.fail(.clientGone)
    }

    /// Whether the body being streamed in has as much unread as it holds: the socket's reads
    /// wait until its consumer has taken enough (``resumeStreamedBodyReads()``).
    func streamedBodyPausesReads() -> Bool {
        guard case .responding(let exchange) = self.state, let stream = exchange.receivingBody else { return false }
        return stream.pauseIfFull()
    }

    /// The consumer of a streamed body has caught up: passes on the read that waited, unless
    /// something else still holds it (pipelined requests) or the connection is closing.
    func resumeStreamedBodyReads() {
        guard let context = self.context, self.pipelined.readIsWaiting, self.pipelined.isEmpty else { return }
        if case .closing = self.state { return }
        self.pipelined.readIsWaiting = false
        context.read()
    }
}
