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
    func startStreamingBody(head: HTTPRequestHead, exchange: InFlightRequest, persistence: Connection.Persistence, context: ChannelHandlerContext) {
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let eventLoop = context.eventLoop
        let stream = RequestBodyStream(
            patience: self.environment.configuration.requestBodyTimeout,
            resume: { eventLoop.execute { handler.value.resumeStreamedBodyReads() } })
        exchange.bodyStream = stream
        self.machine.streamBodyIn(exchange: exchange, persistence: persistence)
        self.meetExpectation(of: exchange, context: context)
        // An expectation refused was answered (and the connection closes).
        guard self.machine.answering === exchange else { return }
        self.dispatch(head: head, body: context.channel.allocator.buffer(capacity: 0), exchange: exchange, context: context, bodyStream: stream)
    }

    /// The body being streamed in, if any, will not end (the client went away, or sent what
    /// the parser cannot read): its consumer's next read fails with
    /// ``RequestBodyStream/Failure/clientGone``, and the connection closes after the answer.
    func failStreamedBody() {
        self.machine.streamedBodyFailed()?.bodyStream?.fail(.clientGone)
    }

    /// The consumer of a streamed body has caught up: passes on the read that waited, unless
    /// something else still holds it (pipelined requests) or the connection is closing.
    func resumeStreamedBodyReads() {
        guard let context = self.context, self.machine.bodyConsumerCaughtUp() else { return }
        context.read()
    }
}
