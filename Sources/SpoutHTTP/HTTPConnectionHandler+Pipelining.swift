import NIOCore
import NIOHTTP1

/// HTTP/1.1 pipelining and the server's shutdown for ``HTTPConnectionHandler``: requests that
/// arrive while one is answered wait in ``PipelinedRequests`` and are taken up, in order, as
/// each response ends; on shutdown the request under way is the connection's last. (NIO's
/// `HTTPServerPipelineHandler` did this from its own place in the pipeline, which every part of
/// every request and response passed through, and turned the socket's read interest off and on
/// around each request.)
extension HTTPConnectionHandler {
    /// Reads go on while a response is written, unless pipelined arrivals wait to be taken up
    /// or a streamed body's consumer is behind (then the read waits: its stream has as much
    /// unread as it holds, until ``resumeStreamedBodyReads()``), or the connection is closing.
    func read(context: ChannelHandlerContext) {
        guard self.machine.readRequested(bodyPausesReads: { $0.bodyStream?.pauseIfFull() ?? false }) else { return }
        context.read()
    }

    /// Takes up what arrived while the last response was written, until a request is being
    /// answered again (or the connection closes); then passes on a read that waited for it. A
    /// response that ends at once (a 404) comes back here from ``receive(_:context:)``; the
    /// `while` loop, not recursion, takes up the next request.
    func takeUpPipelined(context: ChannelHandlerContext) {
        guard self.machine.startTakingUp() else { return }
        while let arrival = self.machine.nextHeld() {
            switch arrival {
            case .part(let part):
                self.receive(part, context: context)
            case .parserError(let error):
                if case .answerAndClose = self.machine.refused() { self.refuse(error, context: context) }
            }
        }
        if self.machine.takingUpEnded() { context.read() }
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
        if self.machine.quiesce() { context.close(promise: nil) }
    }
}
