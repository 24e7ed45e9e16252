import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPCompression

/// The last handler of a client channel: for each exchange on its connection it hands the
/// response head to whoever waits for it and the body's chunks to whoever asks, and it reads
/// the socket only when asked.
///
/// The channel runs with `autoRead` off. The handler calls `read()` while the head is awaited
/// and when a consumer asks for a chunk that has not arrived; otherwise nothing is read, the
/// kernel's receive buffer fills, TCP's window closes and the server stops sending (Spout
/// then stops reading its database). What one `read()` brings in is all that is held here: at
/// most `maxMessagesPerRead` socket reads of the receive allocator's buffer size (decoded,
/// when the body is compressed).
///
/// One connection carries exchanges one after the other (``begin()``). After a body ended on a
/// response that allows keep-alive, ``isReusable`` is true and the connection may wait in the
/// pool (``park(idleTimeout:)``); a response with `Connection: close`, an error or a body not
/// read to its end close it.
///
/// With a read timeout, a wait for the head or for a chunk that a consumer asked for fails
/// with ``SpoutClientError/timedOut(_:)`` when nothing arrives in time; a consumer that is
/// slow to ask is never timed out.
///
/// Every method runs on the channel's event loop: NIO calls the handler methods there, and
/// the transport reaches the others through `NIOLoopBound` on the same loop.
final class ResponseStreamHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    private let eventLoop: any EventLoop
    private let readTimeout: TimeAmount?
    private var timeout: Scheduled<Void>?
    private var context: ChannelHandlerContext?
    /// The current exchange's head, until it arrived or failed.
    private var headPromise: EventLoopPromise<HTTPResponseHead>?
    private var receivedHead = false
    private var keepAlive = false
    private var chunks: [ByteBuffer] = []
    private var ended = false
    /// The trailer fields of a chunked body, once it ended (Spout's `Spout-Truncated`).
    private(set) var trailers = HTTPFields()
    private var failure: SpoutClientError?
    private var waiter: EventLoopPromise<[ByteBuffer]?>?
    /// While the connection waits in the pool: the close at the end of its idle time.
    private var idleClose: Scheduled<Void>?
    private var isParked = false

    init(eventLoop: any EventLoop, readTimeout: TimeAmount?) {
        self.eventLoop = eventLoop
        self.readTimeout = readTimeout
    }

    /// Whether the connection may carry another exchange: the last body ended, the response
    /// allowed keep-alive, nothing failed, and the connection is open.
    var isReusable: Bool {
        self.ended && self.keepAlive && self.failure == nil && self.context?.channel.isActive == true
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// Starts an exchange (call it before writing the request) and reads for its head; the
    /// future succeeds with the head or fails with the reason none came.
    func begin() -> EventLoopFuture<HTTPResponseHead> {
        self.isParked = false
        self.idleClose?.cancel()
        self.idleClose = nil
        self.receivedHead = false
        self.keepAlive = false
        self.chunks.removeAll()
        self.ended = false
        self.trailers = HTTPFields()
        self.failure = nil
        self.waiter = nil
        guard let context = self.context, context.channel.isActive else {
            self.failure = .connectionFailed("the connection was closed")
            return self.eventLoop.makeFailedFuture(SpoutClientError.connectionFailed("the connection was closed"))
        }
        let promise = self.eventLoop.makePromise(of: HTTPResponseHead.self)
        self.headPromise = promise
        self.armTimeout()
        context.read()
        return promise.futureResult
    }

    /// The connection waits in the pool: a read stays pending so that the server's close is
    /// seen at once, and it closes after `idleTimeout` unless an exchange begins first.
    func park(idleTimeout: TimeAmount) {
        guard let context = self.context else { return }
        self.isParked = true
        context.read()
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        self.idleClose?.cancel()
        self.idleClose = context.eventLoop.scheduleTask(in: idleTimeout) {
            let handler = loopBound.value
            if handler.isParked { handler.context?.close(promise: nil) }
        }
    }

    /// The chunks received so far, or a read and the next chunks when there are none; nil
    /// at the body's end. Fails with ``SpoutClientError/truncatedBody`` when the connection
    /// closed before the end. One demand at a time.
    func demand() -> EventLoopFuture<[ByteBuffer]?> {
        let eventLoop = self.eventLoop
        if !self.chunks.isEmpty {
            defer { self.chunks.removeAll(keepingCapacity: true) }
            return eventLoop.makeSucceededFuture(self.chunks)
        }
        if self.ended { return eventLoop.makeSucceededFuture(nil) }
        if let failure = self.failure { return eventLoop.makeFailedFuture(failure) }
        guard let context = self.context, context.channel.isActive, self.waiter == nil else {
            return eventLoop.makeFailedFuture(SpoutClientError.truncatedBody)
        }
        let promise = eventLoop.makePromise(of: [ByteBuffer]?.self)
        self.waiter = promise
        self.armTimeout()
        context.read()
        return promise.futureResult
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let inExchange = self.headPromise != nil || (self.receivedHead && !self.ended && self.failure == nil)
        guard inExchange else {
            // Bytes outside an exchange (on an idle connection, after a body's end): the
            // connection cannot be trusted with another exchange.
            if self.failure == nil { self.failure = .connectionFailed("the server sent bytes outside an exchange") }
            context.close(promise: nil)
            return
        }
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            self.receivedHead = true
            self.keepAlive = head.isKeepAlive
            self.cancelTimeout()
            self.headPromise?.succeed(head)
            self.headPromise = nil
        case .body(let buffer):
            self.chunks.append(buffer)
        case .end(let trailers):
            self.ended = true
            if let trailers { self.trailers = HTTPFields(trailers) }
            // The server said it closes (or HTTP/1.0): nothing else will come on it.
            if !self.keepAlive { context.close(promise: nil) }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if let waiter = self.waiter, !self.chunks.isEmpty || self.ended {
            self.waiter = nil
            self.cancelTimeout()
            let chunks = self.chunks
            self.chunks.removeAll(keepingCapacity: true)
            waiter.succeed(chunks.isEmpty ? nil : chunks)
        } else if !self.isParked && (self.headPromise != nil || self.waiter != nil) {
            // Still waiting: the head, or the chunk a consumer asked for (a read may bring
            // only part of a chunk's framing).
            context.read()
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is NIOHTTPDecompression.DecompressionError || error is NIOHTTPDecompression.ExtraDecompressionError {
            self.fail(.malformedBody("the compressed body could not be decoded: \(error)"))
        } else if let error = error as? SpoutClientError {
            self.fail(error)
        } else {
            self.fail(self.receivedHead ? .truncatedBody : .connectionFailed(String(describing: error)))
        }
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
        if let headPromise = self.headPromise {
            self.headPromise = nil
            self.receivedHead = true
            headPromise.fail(error)
        }
        if let waiter = self.waiter {
            self.waiter = nil
            waiter.fail(error)
        }
    }
}
