import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import SpoutCore

/// Serves the requests of one connection, one at a time (`HTTPServerPipelineHandler` in
/// front of it holds pipelined requests back until the previous response has ended, which
/// keeps responses in order).
///
/// For each request it reads the body (bounded), routes, converts arguments, runs the handler
/// in a task and writes the response: whole bodies with `Content-Length`, row streams through
/// a ``StreamingResponseSink`` fed by a thread-pool thread. Every mutable field is confined to
/// the channel's event loop; work from other threads comes back through ``LoopHop``.
///
/// Before routing it answers CORS preflights (``CORSPolicy``); after routing, and before any
/// argument is converted, it checks the route's ``Route/apiKeys``. Every response head,
/// streamed or whole, carries the request's CORS fields.
final class HTTPConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// One request and its response.
    final class Exchange {
        let number: Int
        let id: String
        let method: HTTPMethod
        let uri: String
        let path: Substring
        let queryString: Substring?
        let version: HTTPVersion
        /// The request's header fields, in order and spelled as received.
        let requestFields: HTTPFields
        let start: NIODeadline
        /// The CORS fields every response head of this exchange carries (empty when CORS is off).
        let corsHeaders: HTTPFields
        var keepAlive: Bool
        /// The template of the route that answers (`unmatched` when none does), for metrics.
        var route = "unmatched"
        /// The status code sent (0 until a response starts), for the log and metrics.
        var status = 0
        var bytes = 0
        var rows: Int?
        var sink: StreamingResponseSink?
        var streamHead: HTTPResponseHead?
        var task: Task<Void, Never>?
        /// The stream counted against the per-address cap, released when the exchange ends.
        var streamTicket: StreamAdmission.Ticket?

        var isHead: Bool { self.method == .HEAD }

        init(number: Int, head: HTTPRequestHead, cors: CORSPolicy) {
            self.number = number
            self.requestFields = HTTPFields(head.headers)
            self.id = RequestID.make(from: self.requestFields[values: .requestID].first)
            self.method = head.method
            self.uri = head.uri
            if let question = head.uri.firstIndex(of: "?") {
                self.path = head.uri[..<question]
                self.queryString = head.uri[head.uri.index(after: question)...]
            } else {
                self.path = head.uri[...]
                self.queryString = nil
            }
            self.version = head.version
            self.start = .now()
            self.corsHeaders = cors.responseHeaders(origin: self.requestFields[values: .origin].first)
            self.keepAlive = head.isKeepAlive
        }
    }

    private enum State {
        case idle
        case receiving(HTTPRequestHead, ByteBuffer, Exchange)
        case responding(Exchange)
        /// The connection is closing (rejected request, `Connection: close`, failure).
        case closing
    }

    private let environment: ConnectionEnvironment
    /// When the request being received started to arrive (see ``RequestArrivalObserver``).
    private let arrival: RequestArrivalClock
    private var state = State.idle
    private var exchangeCount = 0
    private var hop: LoopHop?
    private var context: ChannelHandlerContext?
    /// When the connection last became idle (no request in progress).
    private var idleSince = NIODeadline.now()
    private var deadlineCheck: Scheduled<Void>?

    init(environment: ConnectionEnvironment, arrival: RequestArrivalClock) {
        self.environment = environment
        self.arrival = arrival
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
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            guard case .idle = self.state else { return }
            self.arrival.reset()
            self.exchangeCount += 1
            let exchange = Exchange(number: self.exchangeCount, head: head, cors: self.environment.configuration.cors)
            if let length = exchange.requestFields[values: .contentLength].first.flatMap(Int.init),
                length > self.environment.configuration.maximumBodySize
            {
                self.rejectBody(exchange, context: context)
                return
            }
            self.state = .receiving(head, context.channel.allocator.buffer(capacity: 0), exchange)
        case .body(var chunk):
            guard case .receiving(let head, var body, let exchange) = self.state else { return }
            if body.readableBytes + chunk.readableBytes > self.environment.configuration.maximumBodySize {
                self.rejectBody(exchange, context: context)
                return
            }
            self.state = .idle  // drop the reference so appending does not copy
            body.writeBuffer(&chunk)
            self.state = .receiving(head, body, exchange)
        case .end:
            guard case .receiving(let head, let body, let exchange) = self.state else { return }
            self.state = .responding(exchange)
            self.dispatch(head: head, body: body, exchange: exchange, context: context)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if case .responding(let exchange) = self.state, let sink = exchange.sink {
            sink.writabilityChanged(context.channel.isWritable)
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if case .responding(let exchange) = self.state {
            // The client went away mid-response: log it (first, so the entry exists before the
            // connection is back in the pool), then stop the producer and its statement.
            exchange.keepAlive = false
            if let sink = exchange.sink { exchange.bytes = sink.snapshot.byteCount }
            self.environment.metrics?.clientDisconnects.increment()
            self.log(exchange, failure: "client closed the connection")
            exchange.sink?.close()
            exchange.task?.cancel()
        }
        self.state = .closing
        context.fireChannelInactive()
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
        switch self.state {
        case .idle:
            if let started = self.arrival.requestBytesSince {
                let due = started + self.headTimeout
                guard now < due else {
                    self.environment.logger.info(
                        "request head timeout; connection closed",
                        metadata: ["client.address": .string(context.channel.remoteAddress?.ipAddress ?? "-")])
                    self.state = .closing
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
        case .receiving(_, _, let exchange):
            let due = exchange.start + self.bodyTimeout
            guard now < due else {
                exchange.keepAlive = false
                self.state = .responding(exchange)
                self.sendError(ErrorResponse(status: .requestTimeout, message: "request body timeout"), exchange: exchange, context: context)
                return
            }
            self.scheduleDeadlineCheck(at: min(due, poll), context: context)
        case .responding, .closing:
            self.scheduleDeadlineCheck(at: poll, context: context)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.environment.logger.debug("connection error", metadata: ["error": "\(String(reflecting: error))"])
        context.close(promise: nil)
    }

    // MARK: Requests

    private func rejectBody(_ exchange: Exchange, context: ChannelHandlerContext) {
        exchange.keepAlive = false
        self.state = .responding(exchange)
        self.sendError(ErrorResponse(status: .contentTooLarge, message: "request body too large"), exchange: exchange, context: context)
    }

    private func dispatch(head: HTTPRequestHead, body: ByteBuffer, exchange: Exchange, context: ChannelHandlerContext) {
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
        switch self.environment.router.match(method, path: exchange.path) {
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
            if let keys = route.apiKeys {
                let outcome = keys.check(exchange.requestFields)
                if let refusal = APIKeySet.errorResponse(for: outcome) {
                    self.sendError(refusal, exchange: exchange, context: context)
                    return
                }
            }
            let bodyBytes = Array(body.readableBytesView)
            let request: Request
            do {
                let query = try exchange.queryString.map { query throws(ArgumentError) in try FormURLEncoding.parse(query.utf8) } ?? RawArguments()
                var raw = RawArguments()
                for key in route.keys {
                    if let value = pathKeys[key] { raw.append(value, for: key) }
                }
                raw.merge(query)
                raw.merge(try BodyArguments.parse(bodyBytes, contentType: exchange.requestFields[values: .contentType].first))
                let arguments = try ArgumentConversion.convert(raw, for: route.parameters)
                request = Request(
                    id: exchange.id, method: method, path: String(exchange.path),
                    queryString: exchange.queryString.map(String.init),
                    headers: exchange.requestFields, body: bodyBytes, query: query,
                    routeTemplate: route.template, pathKeys: pathKeys, rawArguments: raw, arguments: arguments
                )
            } catch {
                self.sendError(ErrorResponse(for: error), exchange: exchange, context: context)
                return
            }
            if exchange.version.major == 1 && exchange.version.minor == 0 {
                // HTTP/1.0 has no chunked encoding: a streamed body ends when the connection does.
                exchange.keepAlive = false
            }
            let clientAddress = StreamAdmission.clientAddress(
                peer: context.channel.remoteAddress?.ipAddress ?? "-", forwardedFor: exchange.requestFields[values: .xForwardedFor],
                trustedProxies: self.environment.configuration.trustedProxies)
            let runner = ResponseRunner(
                exchange: ResponseExchange(
                    request: request, timingHeader: self.environment.configuration.timingHeader, logger: self.environment.logger,
                    handler: NIOLoopBound(self, eventLoop: context.eventLoop), hop: self.hop!, number: exchange.number,
                    allocator: context.channel.allocator, chunksInFlight: self.environment.configuration.chunksInFlight,
                    metrics: self.environment.metrics, streams: self.environment.streams, clientAddress: clientAddress,
                    compresses: self.environment.configuration.compression))
            exchange.task = Task(executorPreference: self.hop!.taskExecutor) {
                await runner.run(route: route, request: request)
            }
        }
    }

    /// Answers a CORS preflight: 204 with the path's methods, 403 for an origin not allowed,
    /// 404 for a path without routes.
    private func answerPreflight(exchange: Exchange, cors: CORSPolicy, context: ChannelHandlerContext) {
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
        if case .responding(let exchange) = self.state { return exchange.sink }
        return nil
    }

    private func currentExchange(_ number: Int) -> Exchange? {
        if case .responding(let exchange) = self.state, exchange.number == number { return exchange }
        return nil
    }

    // MARK: Responses (called on the event loop, by the runner through the hop)

    /// Sends a whole response; `rows` is what a row stream wrote (for the access log).
    func sendResponse(_ number: Int, status: HTTPResponse.Status, headers: HTTPFields, body: [UInt8], contentType: String?, rows: Int? = nil) {
        guard let exchange = self.currentExchange(number), let context = self.context else { return }
        exchange.rows = rows
        var headers = headers
        if let contentType { headers.replaceOrAdd(.contentType, contentType) }
        self.sendWhole(exchange, status: status, headers: headers, body: body, context: context)
    }

    func sendFailure(_ number: Int, error: any Error) {
        guard let exchange = self.currentExchange(number), let context = self.context else { return }
        self.sendError(ErrorResponse(for: error), exchange: exchange, context: context, cause: error)
    }

    /// Prepares a streamed response: the head to send with the first chunk.
    func attachSink(_ number: Int, sink: StreamingResponseSink, status: HTTPResponse.Status, headers: HTTPFields) {
        guard let exchange = self.currentExchange(number), let context = self.context else {
            sink.close()
            return
        }
        exchange.sink = sink
        exchange.status = status.code
        var fields = self.headFields(exchange, headers: headers)
        if exchange.isHead && self.environment.configuration.compression {
            fields.replaceOrAdd(.spoutIdentity, "1")
        }
        exchange.streamHead = HTTPResponseHead(version: exchange.version, status: HTTPResponseStatus(status), headers: HTTPHeaders(fields))
        sink.writabilityChanged(context.channel.isWritable)
    }

    /// Keeps the per-address stream count of the exchange until it ends.
    func attachStreamTicket(_ number: Int, ticket: StreamAdmission.Ticket) {
        guard let exchange = self.currentExchange(number) else {
            ticket.end()
            return
        }
        exchange.streamTicket = ticket
    }

    /// Writes one chunk of a streamed body (after the head, for the first).
    func streamChunk(_ number: Int, _ chunk: ByteBuffer, isFirst: Bool) {
        guard let exchange = self.currentExchange(number), let sink = exchange.sink, let context = self.context else { return }
        if isFirst, let head = exchange.streamHead {
            context.write(self.wrapOutboundOut(.head(head)), promise: nil)
            self.environment.metrics?.firstByte(route: exchange.route, after: .nanoseconds((NIODeadline.now() - exchange.start).nanoseconds))
        }
        if !exchange.isHead {
            context.write(self.wrapOutboundOut(.body(.byteBuffer(chunk))), promise: nil)
        }
        context.flush()
        if let buffered = try? context.channel.syncOptions?.getOption(.bufferedWritableBytes) {
            self.environment.statistics.recordBufferedOutbound(buffered)
        }
        sink.chunkWritten(channelIsWritable: context.channel.isWritable)
    }

    /// The producer is done: end the response, or report the failure.
    /// `timing` is a `Server-Timing` value for a response that is still sent whole; `trailers`
    /// end a chunked body, or become header fields of a response that is still sent whole.
    func streamDone(
        _ number: Int, sink: StreamingResponseSink, result: Result<Int, any Error>, timing: String? = nil,
        trailers: HTTPFields? = nil
    ) {
        let snapshot = sink.snapshot
        self.environment.statistics.recordPauses(snapshot.pauses)
        if snapshot.pauses > 0 { self.environment.metrics?.backpressurePauses.increment(by: Int64(snapshot.pauses)) }
        guard let exchange = self.currentExchange(number), let context = self.context else { return }
        switch result {
        case .success(let rows):
            exchange.rows = rows
            let rest = snapshot.finishedRest ?? []
            if snapshot.headSent {
                // The producer is done (its connection released); what it spooled still goes
                // out at the client's pace, then the end.
                let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
                sink.whenDrained { complete in
                    let handler = handler.value
                    guard let exchange = handler.currentExchange(number), let context = handler.context else { return }
                    exchange.sink = nil
                    exchange.bytes = snapshot.byteCount
                    if complete {
                        let last = rest.isEmpty ? nil : context.channel.allocator.buffer(bytes: rest)
                        handler.end(exchange, lastChunk: last, context: context, trailers: trailers)
                    } else {
                        handler.cutShort(exchange, failure: "the spool lost part of the body", context: context)
                    }
                }
            } else {
                exchange.sink = nil
                var headers = HTTPFields(exchange.streamHead?.headers ?? HTTPHeaders())
                if let timing { headers.append(HTTPField(name: .serverTiming, value: timing)) }
                if let trailers {
                    headers[.trailer] = nil
                    for field in trailers { headers.replaceOrAdd(field.name, field.value) }
                }
                self.sendWhole(exchange, status: HTTPResponse.Status(code: exchange.status), headers: headers, body: rest, context: context)
            }
        case .failure(let error):
            exchange.sink = nil
            if snapshot.headDelivered {
                // Too late for a status: cut the body short (no terminating chunk) so the
                // client sees an incomplete response, and close.
                exchange.bytes = snapshot.byteCount
                self.cutShort(exchange, failure: String(reflecting: error), context: context)
            } else {
                // Nothing reached the client yet (what was spooled is dropped): a status still can.
                sink.close()
                self.sendError(ErrorResponse(for: error), exchange: exchange, context: context, cause: error)
            }
        }
    }

    /// Ends a response whose head was sent without its terminating chunk, and closes.
    private func cutShort(_ exchange: Exchange, failure: String, context: ChannelHandlerContext) {
        exchange.keepAlive = false
        self.log(exchange, failure: failure)
        self.state = .closing
        context.close(promise: nil)
    }

    // MARK: Writing

    private func sendError(_ response: ErrorResponse, exchange: Exchange, context: ChannelHandlerContext, cause: (any Error)? = nil) {
        var headers = response.headers
        headers.replaceOrAdd(.contentType, "application/json")
        let failure = response.status.code >= 500 ? cause.map { String(reflecting: $0) } : nil
        self.sendWhole(exchange, status: response.status, headers: headers, body: response.body, context: context, failure: failure)
    }

    private func sendWhole(
        _ exchange: Exchange, status: HTTPResponse.Status, headers: HTTPFields, body: [UInt8], context: ChannelHandlerContext,
        failure: String? = nil
    ) {
        exchange.status = status.code
        var fields = self.headFields(exchange, headers: headers)
        let hasBody = status != .noContent && status != .notModified && status.kind != .informational
        if hasBody {
            fields.replaceOrAdd(.contentLength, String(body.count))
        }
        if (!hasBody || exchange.isHead) && self.environment.configuration.compression {
            fields.replaceOrAdd(.spoutIdentity, "1")
        }
        exchange.bytes = hasBody ? body.count : 0
        let head = HTTPResponseHead(version: exchange.version, status: HTTPResponseStatus(status), headers: HTTPHeaders(fields))
        context.write(self.wrapOutboundOut(.head(head)), promise: nil)
        let last = hasBody && !body.isEmpty ? context.channel.allocator.buffer(bytes: body) : nil
        self.end(exchange, lastChunk: last, context: context, failure: failure)
    }

    /// Writes the last body part and the end of the response (with `trailers`, which only a
    /// chunked body carries), then goes back to idle (or closes).
    private func end(
        _ exchange: Exchange, lastChunk: ByteBuffer?, context: ChannelHandlerContext, failure: String? = nil,
        trailers: HTTPFields? = nil
    ) {
        if let lastChunk, !exchange.isHead {
            context.write(self.wrapOutboundOut(.body(.byteBuffer(lastChunk))), promise: nil)
        }
        self.log(exchange, failure: failure)
        // Set the state first: writing `.end` may deliver the next pipelined request at once.
        let keepAlive = exchange.keepAlive
        self.state = keepAlive ? .idle : .closing
        self.idleSince = .now()
        self.arrival.reset()
        let trailerFields = trailers.map(HTTPHeaders.init)
        if keepAlive {
            context.writeAndFlush(self.wrapOutboundOut(.end(trailerFields)), promise: nil)
        } else {
            let channel = context.channel
            context.writeAndFlush(self.wrapOutboundOut(.end(trailerFields))).whenComplete { _ in channel.close(promise: nil) }
        }
    }

    /// The fields of a response head: `headers`, then the exchange's CORS fields, `X-Request-Id`
    /// and `Connection` where the version or closing needs it.
    private func headFields(_ exchange: Exchange, headers: HTTPFields) -> HTTPFields {
        var fields = headers
        for field in exchange.corsHeaders {
            if field.name == .vary {
                // Keep the handler's Vary values; a head built twice (streamDone) adds it once.
                let present = fields[values: .vary].contains { value in
                    value.split(separator: ",").contains { $0.trimmingBlanks.lowercased() == field.value.lowercased() }
                }
                if !present { fields.append(field) }
            } else {
                fields.replaceOrAdd(field.name, field.value)
            }
        }
        fields.replaceOrAdd(.requestID, exchange.id)
        if !exchange.keepAlive {
            fields.replaceOrAdd(.connection, "close")
        } else if exchange.version.minor == 0 {
            fields.replaceOrAdd(.connection, "keep-alive")
        }
        return fields
    }

    // MARK: Access log

    private func log(_ exchange: Exchange, failure: String?) {
        exchange.streamTicket?.end()
        exchange.streamTicket = nil
        let elapsed = NIODeadline.now() - exchange.start
        self.environment.metrics?.requestCompleted(
            route: exchange.route, method: exchange.method.rawValue, status: exchange.status,
            duration: .nanoseconds(elapsed.nanoseconds), bytes: exchange.bytes, rows: exchange.rows)
        var metadata: Logger.Metadata = [
            "request.id": .string(exchange.id),
            "http.method": .string(exchange.method.rawValue),
            "http.path": .string(String(exchange.path)),
            "http.status": .stringConvertible(exchange.status),
            "http.bytes": .stringConvertible(exchange.bytes),
            "duration.ms": .stringConvertible(Double(elapsed.nanoseconds / 1000) / 1000),
        ]
        if let rows = exchange.rows { metadata["query.rows"] = .stringConvertible(rows) }
        if let failure {
            metadata["error"] = .string(failure)
            self.environment.logger.error("request failed", metadata: metadata)
        } else {
            self.environment.logger.info("request", metadata: metadata)
        }
    }
}
