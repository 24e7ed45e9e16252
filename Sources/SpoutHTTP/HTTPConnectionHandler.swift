import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import SpoutCore

/// Serves the requests of one connection, one at a time, in order: a request that arrives
/// before the previous response has ended (HTTP/1.1 pipelining) waits in
/// ``PipelinedRequests`` and is taken up when that response ends
/// (`HTTPConnectionHandler+Pipelining.swift`).
///
/// For each request it reads the body (bounded), routes, converts arguments, runs the handler
/// in a task and writes the response: whole bodies with `Content-Length`, streams through a
/// ``StreamingResponseSink`` fed by their producer (a database thread for rows, a compression
/// thread for a coded stream, the live notices for an event stream). Every mutable field is confined to
/// the channel's event loop; work from other threads comes back through ``LoopHop``.
///
/// A request the parser cannot read never reaches it as a request: it answers the parser's
/// error (400 or 431) and closes. Before routing it answers CORS preflights (``CORSPolicy``);
/// after routing, and before any argument is converted, it checks the route's
/// ``Route/apiKeys``. Every response head, streamed or whole, carries the request's CORS
/// fields. Its responses are in `HTTPConnectionHandler+Responses.swift`; each request's record
/// is an ``InFlightRequest``. What happens to the connection (which request is received or
/// answered, what is held, whether a read goes on, keep-alive or close) is decided by its
/// ``HTTPConnectionStateMachine``; the handler performs it.
final class HTTPConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart
    typealias Connection = HTTPConnectionStateMachine<InFlightRequest>

    let environment: ConnectionEnvironment
    /// When the request being received started to arrive (see ``RequestArrivalObserver``).
    let arrival: RequestArrivalClock
    /// Where each request's entry goes (the environment's logger).
    let accessLog: AccessLog
    /// Every decision about the connection. Internal rather than private: the responses
    /// (HTTPConnectionHandler+Responses.swift) move it too. The event loop's.
    var machine = Connection()
    private var exchangeCount = 0
    private var hop: LoopHop?
    private(set) var context: ChannelHandlerContext?
    /// When the connection last became idle (no request in progress).
    var idleSince = NIODeadline.now()
    private var deadlineCheck: Scheduled<Void>?
    /// The peer's IP address as text, read once per connection (a connection's peer does not
    /// change); `-` when the channel has none.
    private var peerAddress: String?

    init(environment: ConnectionEnvironment, arrival: RequestArrivalClock) {
        self.environment = environment
        self.arrival = arrival
        self.accessLog = AccessLog(logger: environment.logger)
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        self.hop = self.environment.makeHop(context.eventLoop)
        self.scheduleDeadlineCheck(at: .now() + min(self.idleTimeout, self.headTimeout), context: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        self.deadlineCheck?.cancel()
        self.deadlineCheck = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.machine.arrived(self.unwrapInboundIn(data)) {
        case .receive(let part):
            self.receive(part, context: context)
        case .streamBody(let exchange, let chunk):
            exchange.bodyStream?.append(Array(chunk.readableBytesView))
        case .endStreamedBody(let exchange):
            exchange.bodyStream?.finish()
        case .none:
            break
        }
    }

    /// Takes one part of the request being received (or of the next one, when idle).
    func receive(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
        switch part {
        case .head(let head):
            guard self.machine.takesHead else { return }
            self.arrival.reset()
            self.exchangeCount += 1
            let exchange = InFlightRequest(
                number: self.exchangeCount, head: head, cors: self.environment.configuration.cors, tracer: self.environment.tracer)
            var persistence = head.isKeepAlive ? Connection.Persistence.keepAlive : .close
            switch RequestHeadRule(head) {
            case .refuse(let message):
                self.answerBeforeTheBody(ErrorResponse(status: .badRequest, message: message), exchange: exchange, context: context)
                return
            case .answerThenClose:
                persistence = .close
            case .proceed:
                break
            }
            exchange.maximumBodySize = self.maximumBodySize(for: head, exchange: exchange)
            if case .found(let route, _) = exchange.routeMatch, route.streamsBody {
                self.startStreamingBody(head: head, exchange: exchange, persistence: persistence, context: context)
                return
            }
            let length = exchange.requestFields[values: .contentLength].first.flatMap(Int.init)
            if let length, length > exchange.maximumBodySize {
                self.rejectBody(exchange, context: context)
                return
            }
            // Refused at once when the announced body cannot fit now; reserved as it arrives
            // (a client that announces much and trickles holds only what it sent).
            if let length, length > 0, !self.environment.bodyBudget.hasRoom(for: length) {
                self.refuseBody(length, of: exchange, context: context)
                return
            }
            self.machine.receiveBody(head: head, body: context.channel.allocator.buffer(capacity: 0), exchange: exchange, persistence: persistence)
            self.meetExpectation(of: exchange, context: context)
        case .body(var chunk):
            guard let receiving = self.machine.receiving else { return }
            let exchange = receiving.exchange
            if receiving.bodyBytes + chunk.readableBytes > exchange.maximumBodySize {
                self.rejectBody(exchange, context: context)
                return
            }
            guard self.holdBody(chunk.readableBytes, of: exchange, context: context) else { return }
            self.machine.appendBody(&chunk)
        case .end:
            guard let received = self.machine.bodyEnded() else { return }
            self.dispatch(head: received.head, body: received.body, exchange: received.exchange, context: context)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if let sink = self.machine.answering?.sink {
            sink.writabilityChanged(context.channel.isWritable)
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        switch self.machine.channelInactive() {
        case .abandonResponse(let exchange, let bodyWasStreaming):
            // A body being streamed in will not end: its consumer fails.
            if bodyWasStreaming { exchange.bodyStream?.fail(.clientGone) }
            // The client went away mid-response: log it (first, so the entry exists before the
            // connection is back in the pool), then stop the producer and its statement.
            if let sink = exchange.sink { exchange.bytes = sink.snapshot.byteCount }
            // An event stream ends when its client leaves: that is its ordinary end.
            let isEventStream = exchange.streamHead?.headers.first(name: "content-type") == "text/event-stream"
            if !isEventStream { self.environment.metrics?.clientDisconnects.increment() }
            self.log(exchange, failure: isEventStream ? nil : "client closed the connection")
            exchange.sink?.close()
            exchange.task?.cancel()
        case .abandonRequest(let exchange):
            // Gone before its body arrived: no response and no log line, but a span that was
            // started must end, or the tracer would hold it for good.
            exchange.trace.span?.abandon(requestID: exchange.id)
        case .none:
            break
        }
        context.fireChannelInactive()
    }

    /// The body limit of the request `head` starts: its route's own when it sends a body (a
    /// `Content-Length` above 0, or chunks) to a route that has one, else the server's. The
    /// route it finds is kept for the dispatch (``InFlightRequest/routeMatch``).
    private func maximumBodySize(for head: HTTPRequestHead, exchange: InFlightRequest) -> Int {
        let limit = self.environment.configuration.maximumBodySize
        guard exchange.sendsBody, self.environment.router.hasBodyLimits, let method = HTTPRequest.Method(head.method.rawValue) else {
            return limit
        }
        let match = self.environment.router.match(method, path: exchange.path)
        exchange.routeMatch = match
        guard case .found(let route, _) = match else { return limit }
        return route.maximumBodySize ?? limit
    }

    // MARK: Timeouts

    private var idleTimeout: TimeAmount {
        TimeAmount(self.environment.configuration.idleTimeout)
    }

    private var headTimeout: TimeAmount {
        TimeAmount(self.environment.configuration.requestHeadTimeout)
    }

    private var bodyTimeout: TimeAmount {
        TimeAmount(self.environment.configuration.requestBodyTimeout)
    }

    /// One timer per connection, not per request, enforcing three deadlines:
    /// - idle keep-alive: no request in progress and no byte of one for ``idleTimeout``: close;
    /// - request head: the head must be complete within ``headTimeout`` of its first byte (of
    ///   the accept, for a connection's first request): close, as nginx does (there is no
    ///   request to answer yet, and a slowloris client would not read the answer);
    /// - request body: the body must be complete within ``bodyTimeout`` of its head: 408 and
    ///   close.
    /// The timer never sleeps longer than the head timeout, so a head that starts arriving
    /// after it was scheduled is still caught on time; when it fires early it moves to the
    /// nearest deadline. Nothing is scheduled or cancelled per request.
    private func scheduleDeadlineCheck(at deadline: NIODeadline, context: ChannelHandlerContext) {
        self.deadlineCheck = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            self.checkDeadlines(context: context)
        }
    }

    private func checkDeadlines(context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        let now = NIODeadline.now()
        let poll = now + self.headTimeout
        switch self.machine.state {
        case .idle:
            if let started = self.arrival.requestBytesSince {
                let due = started + self.headTimeout
                guard now < due else {
                    self.environment.logger.info(
                        "request head timeout; connection closed",
                        metadata: ["client.address": .string(context.channel.remoteAddress?.ipAddress ?? "-")])
                    self.machine.close()
                    context.close(promise: nil)
                    return
                }
                self.scheduleDeadlineCheck(at: due, context: context)
            } else {
                let due = self.idleSince + self.idleTimeout
                guard now < due else {
                    context.close(promise: nil)
                    return
                }
                self.scheduleDeadlineCheck(at: min(due, poll), context: context)
            }
        case .receiving(let receiving):
            let exchange = receiving.exchange
            let due = exchange.start + self.bodyTimeout
            guard now < due else {
                self.answerBeforeTheBody(
                    ErrorResponse(status: .requestTimeout, message: "request body timeout"), exchange: exchange, context: context)
                return
            }
            self.scheduleDeadlineCheck(at: min(due, poll), context: context)
        case .responding, .closing:
            self.scheduleDeadlineCheck(at: poll, context: context)
        }
    }

    /// A request the parser rejects gets 431 when its head is too large, 400 otherwise, unless
    /// a response is under way or the connection is already closed; then the connection
    /// closes, as it does on any other error. The parser's error for a request pipelined behind
    /// the one being answered waits its turn, as that request would have. (A head left
    /// half-sent when the connection closes, say at shutdown, is reported as the channel goes
    /// inactive, and not answered.)
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let parserError = error as? HTTPParserError {
            // A body being streamed in will not end (a broken chunk, the input closed).
            self.failStreamedBody()
            if case .answerAndClose = self.machine.parserFailed(parserError) { self.refuse(parserError, context: context) }
            return
        }
        self.environment.logger.debug("connection error", metadata: ["error": "\(String(reflecting: error))"])
        context.close(promise: nil)
    }

    /// Answers the parser's error the machine refused (``HTTPConnectionStateMachine/refused()``:
    /// no response is under way then) unless the channel is gone, and closes.
    func refuse(_ parserError: HTTPParserError, context: ChannelHandlerContext) {
        if context.channel.isActive { self.answerParserError(parserError, context: context) }
        context.close(promise: nil)
    }

    // MARK: Requests

    /// Reserves `bytes` more of `exchange`'s body, as they arrive, in the server's
    /// ``RequestBodyBudget``; when the budget has no room, answers 503 (``refuseBody(_:of:context:)``)
    /// and returns false.
    private func holdBody(_ bytes: Int, of exchange: InFlightRequest, context: ChannelHandlerContext) -> Bool {
        let budget = self.environment.bodyBudget
        let reservation = exchange.bodyReservation ?? RequestBodyBudget.Reservation(budget: budget)
        exchange.bodyReservation = reservation
        guard !budget.reserve(bytes, for: reservation) else { return true }
        self.refuseBody(reservation.bytes + bytes, of: exchange, context: context)
        return false
    }

    /// Answers 503 with `Retry-After` to a request whose body (`bytes` of it so far, or
    /// announced) the server's ``RequestBodyBudget`` has no room for, and closes.
    private func refuseBody(_ bytes: Int, of exchange: InFlightRequest, context: ChannelHandlerContext) {
        let budget = self.environment.bodyBudget
        self.environment.logger.warning(
            "request bodies in memory at their limit",
            metadata: [
                "request.id": .string(exchange.id), "limits.buffered_body_bytes": .stringConvertible(budget.limit),
                "http.request.body.size": .stringConvertible(bytes),
            ])
        self.answerBeforeTheBody(
            ErrorResponse(status: .serviceUnavailable, message: "too many request bodies at once; retry", headers: [.retryAfter: "1"]),
            exchange: exchange, context: context)
    }

    private func rejectBody(_ exchange: InFlightRequest, context: ChannelHandlerContext) {
        // The limit is no secret, and an app uploading a photo needs it to shrink the file.
        let limit = exchange.maximumBodySize
        self.answerBeforeTheBody(
            ErrorResponse(status: .contentTooLarge, message: "request body too large: at most \(limit) bytes"), exchange: exchange,
            context: context)
    }

    /// Answers a request whose body has not (all) arrived with `response`, and closes after it:
    /// the rest of the body may still come, and is not read.
    func answerBeforeTheBody(_ response: ErrorResponse, exchange: InFlightRequest, context: ChannelHandlerContext) {
        self.machine.answerEarly(exchange)
        self.sendError(response, exchange: exchange, context: context)
    }

    func dispatch(
        head: HTTPRequestHead, body: ByteBuffer, exchange: InFlightRequest, context: ChannelHandlerContext,
        bodyStream: RequestBodyStream? = nil
    ) {
        guard let method = HTTPRequest.Method(head.method.rawValue) else {
            // NIO's parser reads only the methods it knows, each a token: not reached.
            self.sendError(ErrorResponse(status: .badRequest, message: "malformed request"), exchange: exchange, context: context)
            return
        }
        let cors = self.environment.configuration.cors
        if cors.isEnabled && method == .options && exchange.requestFields.contains(.accessControlRequestMethod) {
            self.answerPreflight(exchange: exchange, cors: cors, context: context)
            return
        }
        switch exchange.routeMatch ?? self.environment.router.match(method, path: exchange.path) {
        case .notFound:
            self.sendError(ErrorResponse(status: .notFound, message: "not found"), exchange: exchange, context: context)
        case .methodNotAllowed(let allowed):
            let allow = allowed.map(\.rawValue).joined(separator: ", ")
            self.sendError(
                ErrorResponse(status: .methodNotAllowed, message: "method not allowed", headers: [.allow: allow]),
                exchange: exchange, context: context
            )
        case .found(let route, let pathKeys):
            exchange.route = route.template
            exchange.errorFields = route.errorFields
            exchange.trace.span?.routed(method: method.rawValue, template: route.template)
            if let keys = route.apiKeys {
                let outcome = keys.check(exchange.requestFields)
                if let refusal = APIKeySet.errorResponse(for: outcome) {
                    self.sendError(refusal, exchange: exchange, context: context)
                    return
                }
            }
            let bodyBytes = Array(body.readableBytesView)
            var request: Request
            do {
                let query = try exchange.queryString.map { query throws(ArgumentError) in try FormURLEncoding.parse(query.utf8) } ?? RawArguments()
                var raw = RawArguments()
                for key in route.keys {
                    if let value = pathKeys[key] { raw.append(value, for: key) }
                }
                raw.merge(query)
                // A body of another type is refused where a body is how arguments come, and left
                // to the handler elsewhere; a route's upload is one parameter's value.
                let contentType = exchange.requestFields[values: .contentType].first
                if let body = route.body {
                    raw = try body.arguments(bodyBytes, contentType: contentType, replacingIn: raw)
                } else {
                    let takesArguments = method.readsArguments(fromBodyFor: route.parameters)
                    raw.merge(try BodyArguments.parse(bodyBytes, contentType: contentType, takesArguments: takesArguments))
                }
                let arguments = try ArgumentConversion.convert(raw, for: route.parameters)
                request = Request(
                    id: exchange.id, traceContext: exchange.trace.ids, method: method,
                    path: String(exchange.path),
                    queryString: exchange.queryString.map(String.init),
                    headers: exchange.requestFields, body: bodyBytes, query: query,
                    routeTemplate: route.template, pathKeys: pathKeys, rawArguments: raw, arguments: arguments
                )
            } catch {
                self.sendError(ErrorResponse(for: error), exchange: exchange, context: context)
                return
            }
            request.span = exchange.trace.span
            request.bodyStream = bodyStream
            if exchange.version.major == 1 && exchange.version.minor == 0 {
                // HTTP/1.0 has no chunked encoding: a streamed body ends when the connection does.
                self.machine.closeAfterResponse()
            }
            let peer = self.peerAddress ?? context.channel.remoteAddress?.ipAddress ?? "-"
            self.peerAddress = peer
            let clientAddress = StreamAdmission.clientAddress(
                peer: peer, forwardedFor: exchange.requestFields[values: .xForwardedFor],
                trustedProxies: self.environment.configuration.trustedProxies)
            let runner = ResponseRunner(
                exchange: ResponseExchange(
                    request: request, timingHeader: self.environment.configuration.timingHeader, logger: self.environment.logger,
                    handler: NIOLoopBound(self, eventLoop: context.eventLoop), hop: self.hop!, number: exchange.number,
                    allocator: context.channel.allocator, chunksInFlight: self.environment.configuration.chunksInFlight,
                    metrics: self.environment.metrics, streams: self.environment.streams, clientAddress: clientAddress,
                    compresses: self.environment.configuration.compression))
            let tasks = self.environment.requestTasks
            tasks.started()
            let ended = NIOLoopBound(exchange, eventLoop: context.eventLoop)
            exchange.task = Task(executorPreference: self.hop!.taskExecutor) {
                await runner.run(route: route, request: request)
                // Before `tasks.ended()`: shutdown stops the event loops once no task runs.
                ended.eventLoop.execute { ended.value.task = nil }
                tasks.ended()
            }
        }
    }

    /// Answers a CORS preflight: 204 with the path's methods, 403 for an origin not allowed,
    /// 404 for a path without routes.
    private func answerPreflight(exchange: InFlightRequest, cors: CORSPolicy, context: ChannelHandlerContext) {
        guard let methods = self.environment.router.methods(path: exchange.path) else {
            self.sendError(ErrorResponse(status: .notFound, message: "not found"), exchange: exchange, context: context)
            return
        }
        guard cors.allowOrigin(for: exchange.requestFields[values: .origin].first) != nil else {
            self.sendError(ErrorResponse(status: .forbidden, message: "origin not allowed"), exchange: exchange, context: context)
            return
        }
        self.sendWhole(exchange, status: .noContent, headers: cors.preflightHeaders(methods: methods), body: [], context: context)
    }

    /// The sink of the response being streamed, if any (for tests; on the event loop).
    var activeSink: StreamingResponseSink? {
        self.machine.answering?.sink
    }

    func currentExchange(_ number: Int) -> InFlightRequest? {
        guard let exchange = self.machine.answering, exchange.number == number else { return nil }
        return exchange
    }
}
