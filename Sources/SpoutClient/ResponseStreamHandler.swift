import NIOCore
import NIOHTTP1

/// The last handler of a client channel: it hands the response head to whoever waits for it
/// and the body's chunks to whoever asks, and reads the socket only when asked.
///
/// The channel runs with `autoRead` off. The handler calls `read()` while the head is awaited
/// and when a consumer asks for a chunk that has not arrived; otherwise nothing is read, the
/// kernel's receive buffer fills, TCP's window closes and the server stops sending (Spout
/// then stops reading its database). What one `read()` brings in is all that is held here: at
/// most `maxMessagesPerRead` socket reads of the receive allocator's buffer size.
///
/// With a read timeout, a wait for the head or for a chunk that a consumer asked for fails
/// with ``SpoutClientError/timedOut(_:)`` when nothing arrives in time; a consumer that is
/// slow to ask is never timed out.
///
/// Every method runs on the channel's event loop: NIO calls the handler methods there, and
/// ``NIOResponseBody`` reaches ``demand()`` through `NIOLoopBound` on the same loop.
final class ResponseStreamHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    private let headPromise: EventLoopPromise<HTTPResponseHead>
    private let readTimeout: TimeAmount?
    private var timeout: Scheduled<Void>?
    private var context: ChannelHandlerContext?
    private var receivedHead = false
    private var chunks: [ByteBuffer] = []
    private var ended = false
    /// The trailer fields of a chunked body, once it ended (Spout's `Spout-Truncated`).
    private(set) var trailers = SpoutHeaders()
    private var failure: SpoutClientError?
    private var waiter: EventLoopPromise<[ByteBuffer]?>?

    init(headPromise: EventLoopPromise<HTTPResponseHead>, readTimeout: TimeAmount?) {
        self.headPromise = headPromise
        self.readTimeout = readTimeout
    }

    /// The response head, once it has arrived.
    var head: EventLoopFuture<HTTPResponseHead> { self.headPromise.futureResult }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// Starts reading for the head (call after the request is written).
    func readHead() {
        self.armTimeout()
        self.context?.read()
    }

    /// The chunks received so far, or a read and the next chunks when there are none; nil
    /// at the body's end. Fails with ``SpoutClientError/truncatedBody`` when the connection
    /// closed before the end. One demand at a time.
    func demand() -> EventLoopFuture<[ByteBuffer]?> {
        let eventLoop = self.headPromise.futureResult.eventLoop
        if !self.chunks.isEmpty {
            defer { self.chunks.removeAll(keepingCapacity: true) }
            return eventLoop.makeSucceededFuture(self.chunks)
        }
        if self.ended { return eventLoop.makeSucceededFuture(nil) }
        if let failure = self.failure { return eventLoop.makeFailedFuture(failure) }
        guard let context = self.context, self.waiter == nil else {
            return eventLoop.makeFailedFuture(SpoutClientError.truncatedBody)
        }
        let promise = eventLoop.makePromise(of: [ByteBuffer]?.self)
        self.waiter = promise
        self.armTimeout()
        context.read()
        return promise.futureResult
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            self.receivedHead = true
            self.cancelTimeout()
            self.headPromise.succeed(head)
        case .body(let buffer):
            self.chunks.append(buffer)
        case .end(let trailers):
            self.ended = true
            if let trailers { self.trailers = SpoutHeaders(trailers.map { ($0.name, $0.value) }) }
            // One connection per exchange: nothing else will come on it.
            context.close(promise: nil)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if let waiter = self.waiter, !self.chunks.isEmpty || self.ended {
            self.waiter = nil
            self.cancelTimeout()
            let chunks = self.chunks
            self.chunks.removeAll(keepingCapacity: true)
            waiter.succeed(chunks.isEmpty ? nil : chunks)
        } else if !self.receivedHead || self.waiter != nil {
            // Still waiting: the head, or the chunk a consumer asked for (a read may bring
            // only part of a chunk's framing).
            context.read()
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.fail(self.receivedHead ? .truncatedBody : .connectionFailed(String(describing: error)))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !self.ended {
            self.fail(self.receivedHead ? .truncatedBody : .connectionFailed("the server closed the connection before answering"))
        } else if let waiter = self.waiter {
            self.waiter = nil
            let chunks = self.chunks
            self.chunks.removeAll()
            waiter.succeed(chunks.isEmpty ? nil : chunks)
        }
        context.fireChannelInactive()
    }

    /// Starts the clock of the current wait (head or chunk), when there is a read timeout.
    private func armTimeout() {
        guard let readTimeout = self.readTimeout, let context = self.context else { return }
        self.timeout?.cancel()
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        self.timeout = context.eventLoop.scheduleTask(in: readTimeout) {
            loopBound.value.timedOut()
        }
    }

    private func cancelTimeout() {
        self.timeout?.cancel()
        self.timeout = nil
    }

    private func timedOut() {
        self.timeout = nil
        let waiting = self.receivedHead ? "the next bytes of the body" : "the response head"
        let milliseconds = (self.readTimeout?.nanoseconds ?? 0) / 1_000_000
        self.fail(.timedOut("no \(waiting) within \(milliseconds) ms"))
        self.context?.close(promise: nil)
    }

    private func fail(_ error: SpoutClientError) {
        self.cancelTimeout()
        if self.failure == nil { self.failure = error }
        if !self.receivedHead {
            self.receivedHead = true
            self.headPromise.fail(error)
        }
        if let waiter = self.waiter {
            self.waiter = nil
            waiter.fail(error)
        }
    }
}
