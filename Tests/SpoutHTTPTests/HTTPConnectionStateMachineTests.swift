import NIOCore
import NIOHTTP1
import Testing

@testable import SpoutHTTP

/// ``HTTPConnectionStateMachine`` on its own: a connection's requests, what is held behind a
/// response, reads, keep-alive and close, with no channel, handler or socket (an exchange is a
/// numbered object here).
@Suite("The HTTP connection's state machine")
struct HTTPConnectionStateMachineTests {
    final class Exchange {
        let number: Int
        init(_ number: Int) { self.number = number }
    }

    typealias Machine = HTTPConnectionStateMachine<Exchange>

    private static func head(_ uri: String, version: HTTPVersion = .http1_1) -> HTTPServerRequestPart {
        .head(HTTPRequestHead(version: version, method: .GET, uri: uri))
    }

    /// The URI of the head `action` takes now, if it takes a head.
    private static func takenHead(_ action: Machine.ArrivalAction) -> String? {
        if case .receive(.head(let head)) = action { return head.uri }
        return nil
    }

    private static func isNone(_ action: Machine.ArrivalAction) -> Bool {
        if case .none = action { return true }
        return false
    }

    /// Takes `exchange`'s head and its (empty) body's end as the handler does: received
    /// whole, then dispatched.
    private static func start(_ machine: inout Machine, _ exchange: Exchange, persistence: Machine.Persistence = .keepAlive) {
        machine.receiveBody(head: HTTPRequestHead(version: .http1_1, method: .GET, uri: "/\(exchange.number)"), body: ByteBuffer(), exchange: exchange, persistence: persistence)
        #expect(machine.bodyEnded()?.exchange === exchange)
    }

    @Test("pipelined requests are held behind the response and taken up in order as each ends")
    func pipelinedInOrder() {
        var machine = Machine()
        #expect(Self.takenHead(machine.arrived(Self.head("/1"))) == "/1")
        let first = Exchange(1)
        Self.start(&machine, first)
        #expect(machine.answering === first)
        // The client sends two more before the first response ends: both wait.
        for uri in ["/2", "/3"] {
            #expect(Self.isNone(machine.arrived(Self.head(uri))))
            #expect(Self.isNone(machine.arrived(.end(nil))))
        }
        #expect(machine.holdsArrivals)
        // A read now waits until they are taken up.
        let readsOn = machine.readRequested(bodyPausesReads: { _ in false })
        #expect(!readsOn)
        machine.responseHeadSent()
        #expect(machine.responseEnded() == .keepAlive)
        let startsTakeUp = machine.startTakingUp()
        #expect(startsTakeUp)
        let second = Exchange(2)
        #expect(Self.takeUpHeld(&machine, as: second) == "/2")
        // Answering the second: the third waits, and so does the read.
        #expect(machine.nextHeld() == nil)
        let readPassedOn = machine.takingUpEnded()
        #expect(!readPassedOn, "a read passes on while a request is still held")
        // The second's response ends (the take-up runs again from there).
        #expect(machine.responseEnded() == .keepAlive)
        let startsAgain = machine.startTakingUp()
        #expect(startsAgain)
        let startsInside = machine.startTakingUp()
        #expect(!startsInside, "a take-up starts inside another")
        #expect(Self.takeUpHeld(&machine, as: Exchange(3)) == "/3")
        #expect(machine.nextHeld() == nil && !machine.holdsArrivals)
        let waitingReadPassedOn = machine.takingUpEnded()
        #expect(waitingReadPassedOn, "the read that waited is not passed on")
        let nextReadsOn = machine.readRequested(bodyPausesReads: { _ in false })
        #expect(nextReadsOn)
    }

    /// Takes up the next held request (a head and its end) as the handler does, answering it
    /// as `exchange`; returns its URI, nil when the held arrivals are not a whole request.
    private static func takeUpHeld(_ machine: inout Machine, as exchange: Exchange) -> String? {
        guard case .part(.head(let head)) = machine.nextHeld() else { return nil }
        machine.receiveBody(head: head, body: ByteBuffer(), exchange: exchange, persistence: .keepAlive)
        guard case .part(.end) = machine.nextHeld(), machine.bodyEnded()?.exchange === exchange, machine.answering === exchange else {
            return nil
        }
        return head.uri
    }

    @Test("a close while a response streams ends the connection: the streamed body fails, arrivals and reads stop")
    func closeWhileStreaming() {
        var machine = Machine()
        let exchange = Exchange(1)
        machine.streamBodyIn(exchange: exchange, persistence: .keepAlive)
        guard case .streamBody(let target, let bytes) = machine.arrived(.body(ByteBuffer(string: "abc"))) else {
            Issue.record("the body does not go to its stream")
            return
        }
        #expect(target === exchange && bytes.readableBytes == 3)
        machine.responseHeadSent()
        guard case .abandonResponse(let abandoned, let bodyWasStreaming) = machine.channelInactive() else {
            Issue.record("the response in flight is not abandoned")
            return
        }
        #expect(abandoned === exchange && bodyWasStreaming)
        #expect(machine.isClosing && machine.answering == nil)
        #expect(Self.isNone(machine.arrived(Self.head("/2"))))
        #expect(!machine.holdsArrivals, "an arrival is held on a closed connection")
        let readsOn = machine.readRequested(bodyPausesReads: { _ in false })
        #expect(!readsOn)
    }

    @Test("a response whose head goes out before the streamed body's end closes the connection after it")
    func headBeforeStreamedBodyEnd() {
        var machine = Machine()
        let exchange = Exchange(1)
        machine.streamBodyIn(exchange: exchange, persistence: .keepAlive)
        // The consumer is behind: the read waits, and passes on when it catches up.
        let readsOn = machine.readRequested(bodyPausesReads: { $0 === exchange })
        #expect(!readsOn)
        let caughtUp = machine.bodyConsumerCaughtUp()
        #expect(caughtUp)
        let caughtUpTwice = machine.bodyConsumerCaughtUp()
        #expect(!caughtUpTwice, "a read passes on twice")
        #expect(machine.persistenceForHead() == .close)
        machine.responseHeadSent()
        #expect(machine.responseEnded() == .close)
        #expect(machine.isClosing)
    }

    @Test("a streamed body that ends before the head goes out keeps the connection")
    func streamedBodyEndsFirst() {
        var machine = Machine()
        let exchange = Exchange(1)
        machine.streamBodyIn(exchange: exchange, persistence: .keepAlive)
        guard case .endStreamedBody(let ended) = machine.arrived(.end(nil)) else {
            Issue.record("the streamed body's end is not handed to it")
            return
        }
        #expect(ended === exchange)
        #expect(machine.persistenceForHead() == .keepAlive)
        // The stream ended: the next arrival is a pipelined request, held.
        #expect(Self.isNone(machine.arrived(Self.head("/2"))) && machine.holdsArrivals)
        #expect(machine.responseEnded() == .keepAlive)
    }

    @Test("an answer before the body's end closes the connection; the rest of the body is never taken as a request")
    func earlyAnswerCloses() {
        var machine = Machine()
        let exchange = Exchange(1)
        machine.receiveBody(head: HTTPRequestHead(version: .http1_1, method: .POST, uri: "/upload"), body: ByteBuffer(), exchange: exchange, persistence: .keepAlive)
        #expect(machine.receiving?.bodyBytes == 0)
        var chunk = ByteBuffer(string: "12345")
        machine.appendBody(&chunk)
        #expect(machine.receiving?.bodyBytes == 5)
        // Too large, say: answered now.
        machine.answerEarly(exchange)
        #expect(machine.answering === exchange && machine.receiving == nil)
        #expect(Self.isNone(machine.arrived(.body(ByteBuffer(string: "more")))))
        #expect(machine.persistenceForHead() == .close)
        machine.responseHeadSent()
        #expect(machine.responseEnded() == .close)
        #expect(machine.isClosing)
        #expect(machine.nextHeld() == nil)
        let readPassedOn = machine.takingUpEnded()
        #expect(!readPassedOn)
    }

    @Test("a request that asks to close, or a shutdown, makes the request under way the last")
    func lastRequest() {
        var closing = Machine()
        Self.start(&closing, Exchange(1), persistence: .close)
        #expect(closing.persistenceForHead() == .close)
        #expect(closing.responseEnded() == .close)

        var quiescing = Machine()
        Self.start(&quiescing, Exchange(1))
        #expect(Self.isNone(quiescing.arrived(Self.head("/2"))) && quiescing.holdsArrivals)
        let closesNow = quiescing.quiesce()
        #expect(!closesNow, "a connection answering a request closes at once")
        #expect(!quiescing.holdsArrivals, "what was pipelined is kept on shutdown")
        #expect(quiescing.responseEnded() == .close)

        var idle = Machine()
        #expect(idle.quiesce() && idle.isClosing)
    }

    @Test("the parser's refusal during a response waits its turn; between requests it is answered, then the connection closes")
    func parserRefusal() {
        var machine = Machine()
        Self.start(&machine, Exchange(1))
        guard case .none = machine.parserFailed(.invalidHeaderToken) else {
            Issue.record("a refusal is answered while a response is under way")
            return
        }
        #expect(machine.responseEnded() == .keepAlive)
        let startsTakeUp = machine.startTakingUp()
        #expect(startsTakeUp)
        guard case .parserError(.invalidHeaderToken) = machine.nextHeld() else {
            Issue.record("the refusal is not taken up after the response")
            return
        }
        guard case .answerAndClose = machine.refused() else {
            Issue.record("the refusal taken up is not answered")
            return
        }
        #expect(machine.isClosing)
        #expect(machine.nextHeld() == nil)

        var idle = Machine()
        guard case .answerAndClose = idle.parserFailed(.invalidHeaderToken) else {
            Issue.record("a refusal between requests is not answered")
            return
        }
        #expect(idle.isClosing)
    }

    @Test(
        "Expect: 100-continue is answered before a body, ignored without one or from HTTP/1.0; anything else is refused",
        arguments: [
            (["100-continue"], HTTPVersion.http1_1, true, Machine.ExpectationAnswer.sendContinue),
            (["100-Continue, 100-continue"], .http1_1, true, .sendContinue),
            (["100-continue"], .http1_1, false, .none),
            (["100-continue"], .http1_0, true, .none),
            ([], .http1_1, true, .none),
            (["something-else"], .http1_1, true, .refuse),
            (["100-continue", "x"], .http1_1, false, .refuse),
        ])
    func expectation(values: [String], version: HTTPVersion, sendsBody: Bool, answer: Machine.ExpectationAnswer) {
        #expect(Machine.answer(toExpectation: values, version: version, sendsBody: sendsBody) == answer)
    }
}
