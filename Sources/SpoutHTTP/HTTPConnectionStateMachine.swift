import NIOCore
import NIOHTTP1

/// What an ``HTTPConnectionHandler`` decides about its connection, as a value: which request
/// is being received or answered, what the parser delivers meanwhile (taken now, held in
/// order behind the response, or dropped), whether a read from the socket goes on or waits,
/// whether the connection carries another request after the response, and its end.
///
/// Contract: every method is one transition, made on the connection's event loop, and returns
/// what the handler does after (take a part, answer, pass a read on, close). Nothing here
/// touches a channel, a clock or a task, so every decision is unit-tested on its own
/// (`HTTPConnectionStateMachineTests`). `Exchange` is the handler's record of a request
/// (``InFlightRequest``).
///
/// The rules, as the handler's doc comments promise them:
/// - One request at a time, in order. What the parser delivers while a request is answered,
///   or while earlier arrivals wait, is held (``PipelinedRequests``) and taken up once the
///   response ends with the connection kept; the first held part makes the next read wait
///   until everything held is taken up. Once the connection is closing, arrivals are dropped
///   and reads stop.
/// - A body that streams in (``Route/streamsBody``) goes to its stream while its request is
///   answered; its reads wait while its consumer is behind. A response whose head goes out
///   before that body's end closes the connection after it (the rest is not read).
/// - An answer before the body arrived (a refusal, 413, 417, a timeout) closes the connection
///   after it; so does a request that asks to (`Connection: close`, HTTP/1.0 without
///   keep-alive) and a server shutting down.
/// - The parser's refusal is answered only where a request could be: the connection is not
///   answering one (else it waits its turn, held like a request), then it closes.
struct HTTPConnectionStateMachine<Exchange: AnyObject> {
    /// Whether the connection carries another request after the one under way.
    enum Persistence: Equatable {
        case keepAlive
        case close
    }

    /// How the body of the request being answered arrives.
    enum BodyIn: Equatable {
        /// It arrived whole before the dispatch, or no more of it is read.
        case complete
        /// It streams in while the request is answered.
        case streaming
    }

    /// Whether the response's head went to the channel (past that, a failure can only cut the
    /// body short, and the parser's refusal cannot be answered).
    enum ResponseProgress: Equatable {
        case notStarted
        case headSent
    }

    /// A request whose head arrived and whose body arrives whole before it is dispatched.
    struct Receiving {
        var head: HTTPRequestHead
        var body: ByteBuffer
        var exchange: Exchange
        var persistence: Persistence
    }

    /// The request being answered.
    struct Answering {
        var exchange: Exchange
        var persistence: Persistence
        var bodyIn: BodyIn
        var progress: ResponseProgress
    }

    enum State {
        /// Between requests.
        case idle
        case receiving(Receiving)
        case responding(Answering)
        /// The connection is closing (a rejected request, `Connection: close`, a failure, the
        /// channel gone): nothing more is taken.
        case closing
    }

    /// A read from the socket.
    private enum ReadState {
        case flowing
        /// A read was asked for while parts were held or a streamed body's consumer was
        /// behind; it is passed on once they are taken up.
        case waiting
    }

    /// The loop that takes up held arrivals (a response that ends while it takes one up must
    /// not start it again).
    private enum TakeUp {
        case notRunning
        case running
    }

    private(set) var state = State.idle
    private var held = PipelinedRequests()
    private var reads = ReadState.flowing
    private var takeUp = TakeUp.notRunning

    /// Whether anything the parser delivered is held.
    var holdsArrivals: Bool { !self.held.isEmpty }

    /// The request being answered, if any.
    var answering: Exchange? {
        if case .responding(let answering) = self.state { return answering.exchange }
        return nil
    }

    /// Whether the response to the request being answered has sent its head.
    var headSent: Bool {
        if case .responding(let answering) = self.state { return answering.progress == .headSent }
        return false
    }

    var isClosing: Bool {
        if case .closing = self.state { return true }
        return false
    }

    // MARK: Arrivals

    /// What the handler does with a part the parser delivered.
    enum ArrivalAction {
        /// Take it now (``HTTPConnectionHandler/receive(_:context:)``).
        case receive(HTTPServerRequestPart)
        /// Hand these bytes to `exchange`'s streamed body.
        case streamBody(Exchange, ByteBuffer)
        /// `exchange`'s streamed body has ended.
        case endStreamedBody(Exchange)
        /// Nothing now: held behind the response, or dropped (closing).
        case none
    }

    /// The parser delivered `part`.
    mutating func arrived(_ part: HTTPServerRequestPart) -> ArrivalAction {
        if case .responding(var answering) = self.state, answering.bodyIn == .streaming {
            switch part {
            case .body(let chunk):
                return .streamBody(answering.exchange, chunk)
            case .end:
                answering.bodyIn = .complete
                self.state = .responding(answering)
                return .endStreamedBody(answering.exchange)
            case .head:
                // The parser delivers a body's end before the next head: not reached.
                break
            }
        }
        return self.holdBack(.part(part)) ? .none : .receive(part)
    }

    /// What the handler does with the parser's refusal of what arrived.
    enum RefusalAction {
        /// Answer it (400 or 431, `Connection: close`) if the channel is still there, then close.
        case answerAndClose
        /// Nothing now: held behind the response, or dropped (closing).
        case none
    }

    /// The parser refused what arrived with `error` (call ``streamedBodyFailed()`` first: a
    /// body being streamed in will not end).
    mutating func parserFailed(_ error: HTTPParserError) -> RefusalAction {
        self.holdBack(.parserError(error)) ? .none : self.refused()
    }

    /// The refusal taken now (or up from the held ones): answered, then the connection closes
    /// and nothing held is taken up. A request being received keeps its state until the
    /// channel goes inactive.
    mutating func refused() -> RefusalAction {
        if case .idle = self.state { self.state = .closing }
        self.held.drop()
        return .answerAndClose
    }

    /// Whether `arrival` must wait rather than be taken now: a request is being answered, or
    /// earlier arrivals wait. Held in order then; dropped when the connection is closing.
    private mutating func holdBack(_ arrival: PipelinedRequests.Arrival) -> Bool {
        switch self.state {
        case .closing:
            return true
        case .responding:
            self.held.hold(arrival)
            return true
        case .idle, .receiving:
            guard !self.held.isEmpty else { return false }
            self.held.hold(arrival)
            return true
        }
    }

    // MARK: Reads

    /// A read from the socket was asked for; true: pass it on. It waits while arrivals are
    /// held or `bodyPausesReads` (asked only of a body streaming in) says its consumer is
    /// behind; none goes on once the connection is closing.
    mutating func readRequested(bodyPausesReads: (Exchange) -> Bool) -> Bool {
        switch self.state {
        case .closing:
            return false
        case .responding(let answering) where answering.bodyIn == .streaming:
            guard self.held.isEmpty && !bodyPausesReads(answering.exchange) else {
                self.reads = .waiting
                return false
            }
            return true
        case .idle, .receiving, .responding:
            guard self.held.isEmpty else {
                self.reads = .waiting
                return false
            }
            return true
        }
    }

    /// A streamed body's consumer caught up: true when a read that waited passes on now
    /// (nothing held, not closing).
    mutating func bodyConsumerCaughtUp() -> Bool {
        guard self.reads == .waiting, self.held.isEmpty, !self.isClosing else { return false }
        self.reads = .flowing
        return true
    }

    // MARK: Taking up held arrivals

    /// Starts taking up held arrivals; false when that is under way already (the caller is
    /// inside it).
    mutating func startTakingUp() -> Bool {
        guard self.takeUp == .notRunning else { return false }
        self.takeUp = .running
        return true
    }

    /// The next held arrival to take, oldest first, while no request is answered and the
    /// connection is not closing; nil then.
    mutating func nextHeld() -> PipelinedRequests.Arrival? {
        switch self.state {
        case .responding, .closing: nil
        case .idle, .receiving: self.held.takeFirst()
        }
    }

    /// The take-up is over: true when a read that waited for it passes on now.
    mutating func takingUpEnded() -> Bool {
        self.takeUp = .notRunning
        guard self.held.isEmpty && self.reads == .waiting else { return false }
        self.reads = .flowing
        return !self.isClosing
    }

    // MARK: Requests

    /// Whether a request's head may start an exchange now (the connection is between requests).
    var takesHead: Bool {
        if case .idle = self.state { return true }
        return false
    }

    /// A head arrived whose body is to arrive whole before the dispatch.
    mutating func receiveBody(head: HTTPRequestHead, body: ByteBuffer, exchange: Exchange, persistence: Persistence) {
        self.state = .receiving(Receiving(head: head, body: body, exchange: exchange, persistence: persistence))
    }

    /// A head arrived whose body streams in while it is answered: the request is dispatched now.
    mutating func streamBodyIn(exchange: Exchange, persistence: Persistence) {
        self.state = .responding(Answering(exchange: exchange, persistence: persistence, bodyIn: .streaming, progress: .notStarted))
    }

    /// The request being received, and how much of its body arrived.
    var receiving: (exchange: Exchange, bodyBytes: Int)? {
        if case .receiving(let receiving) = self.state { return (receiving.exchange, receiving.body.readableBytes) }
        return nil
    }

    /// Appends `chunk` to the body being received (the handler checked its limits).
    mutating func appendBody(_ chunk: inout ByteBuffer) {
        guard case .receiving(var receiving) = self.state else { return }
        // Drop the state's reference so appending does not copy.
        self.state = .idle
        receiving.body.writeBuffer(&chunk)
        self.state = .receiving(receiving)
    }

    /// The body being received ended: the request is dispatched with it. Nil when none was
    /// being received.
    mutating func bodyEnded() -> (head: HTTPRequestHead, body: ByteBuffer, exchange: Exchange)? {
        guard case .receiving(let receiving) = self.state else { return nil }
        self.state = .responding(
            Answering(exchange: receiving.exchange, persistence: receiving.persistence, bodyIn: .complete, progress: .notStarted))
        return (receiving.head, receiving.body, receiving.exchange)
    }

    /// `exchange` is answered before its body arrived (whole, or to its stream): the rest may
    /// still come and is not read as a request, so the connection closes after the answer.
    mutating func answerEarly(_ exchange: Exchange) {
        var bodyIn = BodyIn.complete
        if case .responding(let answering) = self.state, answering.exchange === exchange { bodyIn = answering.bodyIn }
        self.state = .responding(Answering(exchange: exchange, persistence: .close, bodyIn: bodyIn, progress: .notStarted))
    }

    /// The request under way (received or answered) is the connection's last.
    mutating func closeAfterResponse() {
        switch self.state {
        case .receiving(var receiving):
            receiving.persistence = .close
            self.state = .receiving(receiving)
        case .responding(var answering):
            answering.persistence = .close
            self.state = .responding(answering)
        case .idle, .closing:
            break
        }
    }

    /// The body being streamed in will not end (the client went away, or sent what the parser
    /// cannot read): returns its exchange, whose stream fails; the connection closes after
    /// the answer.
    mutating func streamedBodyFailed() -> Exchange? {
        guard case .responding(var answering) = self.state, answering.bodyIn == .streaming else { return nil }
        answering.bodyIn = .complete
        answering.persistence = .close
        self.state = .responding(answering)
        return answering.exchange
    }

    // MARK: Responses

    /// A response head is being built: whether it says the connection stays. A head that goes
    /// out before a streamed body's end closes the connection.
    mutating func persistenceForHead() -> Persistence {
        guard case .responding(var answering) = self.state else { return .close }
        if answering.bodyIn == .streaming {
            answering.persistence = .close
            self.state = .responding(answering)
        }
        return answering.persistence
    }

    /// The response's head went to the channel.
    mutating func responseHeadSent() {
        guard case .responding(var answering) = self.state else { return }
        answering.progress = .headSent
        self.state = .responding(answering)
    }

    /// The response ended: the connection goes back to idle (the caller takes up what is
    /// held) or closes.
    mutating func responseEnded() -> Persistence {
        guard case .responding(let answering) = self.state else { return .close }
        self.state = answering.persistence == .keepAlive ? .idle : .closing
        return answering.persistence
    }

    // MARK: The connection's end

    /// The connection closes now (a response cut short, a request head that timed out).
    mutating func close() {
        self.state = .closing
        self.held.drop()
    }

    /// What the channel going inactive leaves to clean up.
    enum InactiveAction {
        /// A request was being answered: it is logged and its producer stopped; when
        /// `bodyWasStreaming`, its streamed body fails first.
        case abandonResponse(Exchange, bodyWasStreaming: Bool)
        /// A request's body was arriving: its span ends, with no response.
        case abandonRequest(Exchange)
        case none
    }

    /// The channel went inactive: the connection is closing, whatever was held is dropped.
    mutating func channelInactive() -> InactiveAction {
        let action: InactiveAction
        switch self.state {
        case .responding(let answering):
            action = .abandonResponse(answering.exchange, bodyWasStreaming: answering.bodyIn == .streaming)
        case .receiving(let receiving):
            action = .abandonRequest(receiving.exchange)
        case .idle, .closing:
            action = .none
        }
        self.close()
        return action
    }

    /// The server is shutting down: true when the connection closes now (idle); a request
    /// under way is its last. What was held is dropped unanswered.
    mutating func quiesce() -> Bool {
        self.held.drop()
        switch self.state {
        case .idle:
            self.state = .closing
            return true
        case .receiving, .responding:
            self.closeAfterResponse()
            return false
        case .closing:
            return false
        }
    }
}
