import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import SpoutCore

/// The responses of ``HTTPConnectionHandler``: whole bodies, streams fed by a
/// ``StreamingResponseSink``, errors, and the access log line that ends each request. Called on
/// the event loop (the runner hops there through ``LoopHop``).
extension HTTPConnectionHandler {
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
        let fields = self.headFields(exchange, headers: headers)
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
            self.machine.responseHeadSent()
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
            // The producer is done, but its compression stage may still hold chunks, or wait
            // for the channel with one: closing the sink stops it and drops them.
            sink.close()
            if self.machine.headSent {
                // Too late for a status: cut the body short (no terminating chunk) so the
                // client sees an incomplete response, and close.
                exchange.bytes = snapshot.byteCount
                self.cutShort(exchange, failure: String(reflecting: error), context: context)
            } else {
                // Nothing reached the client yet (what was spooled is dropped): a status still can.
                self.sendError(ErrorResponse(for: error), exchange: exchange, context: context, cause: error)
            }
        }
    }

    /// Ends a response whose head was sent without its terminating chunk, and closes.
    func cutShort(_ exchange: InFlightRequest, failure: String, context: ChannelHandlerContext) {
        self.log(exchange, failure: failure)
        self.machine.close()
        context.close(promise: nil)
    }

    // MARK: Writing

    /// Sends an error answer, with the route's ``Route/errorFields`` under the error's own; the
    /// cause goes to the access log for a 5xx, and for any error that asks for it
    /// (``HTTPResponseError/logsCause``).
    func sendError(_ response: ErrorResponse, exchange: InFlightRequest, context: ChannelHandlerContext, cause: (any Error)? = nil) {
        var headers = response.headers
        headers.replaceOrAdd(.contentType, "application/json")
        for field in exchange.errorFields where !headers.contains(field.name) { headers.append(field) }
        let logsCause = response.status.code >= 500 || (cause as? any HTTPResponseError)?.logsCause == true
        let failure = logsCause ? cause.map { String(reflecting: $0) } : nil
        self.sendWhole(exchange, status: response.status, headers: headers, body: response.body, context: context, failure: failure)
    }

    func sendWhole(
        _ exchange: InFlightRequest, status: HTTPResponse.Status, headers: HTTPFields, body: [UInt8], context: ChannelHandlerContext,
        failure: String? = nil
    ) {
        exchange.status = status.code
        var fields = self.headFields(exchange, headers: headers)
        let hasBody = status.carriesBody
        // The body's own bytes, before any coding (what `spout_http_response_bytes_total` counts).
        exchange.bytes = hasBody ? body.count : 0
        var body = body
        if hasBody {
            self.compressWhole(&body, fields: &fields, exchange: exchange)
            fields.replaceOrAdd(.contentLength, String(body.count))
        }
        let head = HTTPResponseHead(version: exchange.version, status: HTTPResponseStatus(status), headers: HTTPHeaders(fields))
        self.machine.responseHeadSent()
        context.write(self.wrapOutboundOut(.head(head)), promise: nil)
        let last = hasBody && !body.isEmpty ? context.channel.allocator.buffer(bytes: body) : nil
        self.end(exchange, lastChunk: last, context: context, failure: failure)
    }

    /// Encodes a body sent whole with the best coding the request accepts
    /// (``ContentCoding/negotiate(_:)``), on the event loop: such bodies are at most a chunk
    /// (anything bigger streams, and is compressed by its producer). Left as it is with
    /// compression off, when the head already names a coding (a stream that ended before its
    /// first chunk, encoded by its producer), below ``ContentCoding/minimumWholeBody``, and
    /// for a type not worth it (``ContentCoding/compresses(contentType:)``: a stored image).
    /// A body it would compress gets `Vary: Accept-Encoding` whatever the request accepts;
    /// HEAD gets the identity head. A coding that fails leaves the body as it is (logged).
    private func compressWhole(_ body: inout [UInt8], fields: inout HTTPFields, exchange: InFlightRequest) {
        let whole = ContentCoding.forWholeBody(
            count: body.count, fields: fields, acceptEncoding: exchange.requestFields[values: .acceptEncoding].first,
            compression: self.environment.configuration.compression, isHead: exchange.isHead)
        if whole.varies { ContentCoding.varyByAcceptEncoding(&fields) }
        guard let coding = whole.coding else { return }
        do {
            body = try coding.encodeWhole(body)
            fields.replaceOrAdd(.contentEncoding, coding.rawValue)
            coding.mark(&fields)
        } catch {
            self.environment.logger.warning(
                "cannot \(coding.rawValue)-encode a response; it goes uncompressed",
                metadata: ["request.id": "\(exchange.id)", "reason": "\(error)"])
        }
    }

    /// Writes the last body part and the end of the response (with `trailers`, which only a
    /// chunked body carries), then goes back to idle (or closes).
    private func end(
        _ exchange: InFlightRequest, lastChunk: ByteBuffer?, context: ChannelHandlerContext, failure: String? = nil,
        trailers: HTTPFields? = nil
    ) {
        if let lastChunk, !exchange.isHead {
            context.write(self.wrapOutboundOut(.body(.byteBuffer(lastChunk))), promise: nil)
        }
        self.log(exchange, failure: failure)
        let keepAlive = self.machine.responseEnded() == .keepAlive
        self.idleSince = .now()
        self.arrival.reset()
        let trailerFields = trailers.map(HTTPHeaders.init)
        if keepAlive {
            context.writeAndFlush(self.wrapOutboundOut(.end(trailerFields)), promise: nil)
            // The requests pipelined behind this one, in order.
            self.takeUpPipelined(context: context)
        } else {
            let channel = context.channel
            context.writeAndFlush(self.wrapOutboundOut(.end(trailerFields))).whenComplete { _ in channel.close(promise: nil) }
        }
    }

    /// Answers a request the parser rejected: 431 when its head is too large, 400 otherwise,
    /// with `Connection: close` (the caller closes).
    func answerParserError(_ error: HTTPParserError, context: ChannelHandlerContext) {
        let response = error == .headerOverflow
            ? ErrorResponse(status: .requestHeaderFieldsTooLarge, message: "request header fields too large")
            : ErrorResponse(status: .badRequest, message: "malformed request")
        let (head, body) = response.closingParts(allocator: context.channel.allocator)
        context.write(self.wrapOutboundOut(.head(head)), promise: nil)
        context.write(self.wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// The fields of a response head: `headers`, then the exchange's CORS fields, `X-Request-Id`,
    /// `traceresponse`, `X-Content-Type-Options: nosniff`, and `Connection` where the version
    /// or closing needs it.
    private func headFields(_ exchange: InFlightRequest, headers: HTTPFields) -> HTTPFields {
        var fields = headers
        // The rest of a body being streamed in is not read: the connection cannot carry
        // another request after it (the machine says so).
        let keepAlive = self.machine.persistenceForHead() == .keepAlive
        // Room for what follows at once, rather than the array growing field by field.
        fields.reserveCapacity(headers.count + exchange.corsHeaders.count + 4)
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
        fields.replaceOrAdd(.traceResponse, exchange.trace.headerValue)
        fields.replaceOrAdd(.xContentTypeOptions, "nosniff")
        if !keepAlive {
            fields.replaceOrAdd(.connection, "close")
        } else if exchange.version.minor == 0 {
            fields.replaceOrAdd(.connection, "keep-alive")
        }
        return fields
    }

    // MARK: Access log

    func log(_ exchange: InFlightRequest, failure: String?) {
        exchange.streamTicket?.end()
        exchange.streamTicket = nil
        exchange.bodyReservation?.end()
        exchange.bodyReservation = nil
        let elapsed = NIODeadline.now() - exchange.start
        self.environment.metrics?.requestCompleted(
            route: exchange.route, method: exchange.method.rawValue, status: exchange.status,
            duration: .nanoseconds(elapsed.nanoseconds), bytes: exchange.bytes, rows: exchange.rows)
        exchange.trace.span?.end(status: exchange.status, requestID: exchange.id)
        self.accessLog.record(
            AccessLogEntry(
                requestID: exchange.id, traceID: exchange.trace.traceID, spanID: exchange.trace.spanID,
                method: exchange.method.rawValue, path: exchange.path, status: exchange.status, bytes: exchange.bytes,
                milliseconds: Double(elapsed.nanoseconds / 1000) / 1000, rows: exchange.rows, failure: failure))
    }
}
