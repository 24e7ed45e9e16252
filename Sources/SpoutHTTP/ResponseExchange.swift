import HTTPTypes
import Logging
import NIOCore
import SpoutCore

/// Makes the body of a response itself, through the exchange it is given
/// (``Response/Body/produced(_:)``).
///
/// The HTTP layer moves bytes; a producer decides what to send. SpoutEndpoints' row results
/// are the producers of the service: they lease a connection, read, and answer whole,
/// streamed or 304 through the exchange.
public protocol ResponseProducer: Sendable {
    /// Answers the request through `exchange`, with `status` and `headers` as the route
    /// handler set them (the producer adds its own): exactly one of ``ResponseExchange/send(status:headers:body:rows:)``,
    /// ``ResponseExchange/sendNotModified(_:)``, or ``ResponseExchange/startStream(status:headers:)``
    /// followed by ``ResponseExchange/finishStream(_:result:timing:trailers:)``. An error thrown
    /// before any of them becomes the error response (``ErrorResponse``).
    func produce(status: HTTPResponse.Status, headers: HTTPFields, through exchange: ResponseExchange) async throws
}

/// The HTTP layer's side of one exchange whose body a ``ResponseProducer`` makes.
///
/// Contract: every call may come from any thread or task; the writes hop onto the connection's
/// event loop. A response already sent, or a connection gone, makes later calls no-ops (a
/// stream's sink is closed instead, which wakes its producer with
/// ``StreamingResponseSink/ChannelClosed``).
///
/// A class with constant fields: the route's task, the producer and its closures share one
/// exchange rather than copying its two dozen references (a retain and a release each) every
/// time it is passed on.
public final class ResponseExchange: Sendable {
    /// The request being answered.
    public let request: Request
    /// Whether row responses add `Server-Timing` (``ServerConfiguration/timingHeader``).
    public let timingHeader: Bool
    /// The server's logger; messages about this exchange carry `request.id`.
    public let logger: Logger

    let handler: NIOLoopBound<HTTPConnectionHandler>
    let hop: LoopHop
    let number: Int
    let allocator: ByteBufferAllocator
    let chunksInFlight: Int
    let metrics: ServerMetrics?
    let streams: StreamServices?
    /// The address the request's streams count under (``StreamAdmission/clientAddress(peer:forwardedFor:trustedProxies:)``).
    public let clientAddress: String
    /// Whether responses may be compressed (``ServerConfiguration/compression``).
    let compresses: Bool

    init(
        request: Request, timingHeader: Bool, logger: Logger, handler: NIOLoopBound<HTTPConnectionHandler>, hop: LoopHop,
        number: Int, allocator: ByteBufferAllocator, chunksInFlight: Int, metrics: ServerMetrics?, streams: StreamServices?,
        clientAddress: String, compresses: Bool
    ) {
        self.request = request
        self.timingHeader = timingHeader
        self.logger = logger
        self.handler = handler
        self.hop = hop
        self.number = number
        self.allocator = allocator
        self.chunksInFlight = chunksInFlight
        self.metrics = metrics
        self.streams = streams
        self.clientAddress = clientAddress
        self.compresses = compresses
    }

    /// The request's `Accept` field, as sent (the first, when it sent several).
    public var acceptHeader: String? { self.request.headers[values: .accept].first }

    /// The request's `If-None-Match` field, as sent (the first, when it sent several).
    public var ifNoneMatch: String? { self.request.headers[values: .ifNoneMatch].first }

    // MARK: Whole responses

    /// Sends a whole response with `Content-Length`; `rows` is what a row stream wrote, for the
    /// access log.
    ///
    /// A body larger than a stream's memory spool (``SpoolConfiguration/memoryBytesPerStream``)
    /// that goes out as it is (a stored file; not compressed) is written through a sink with the
    /// spool (``sendThroughSpool(status:headers:body:rows:spool:varies:)``): a client that reads it slowly
    /// holds that much of it in memory, the rest in the spool file, where otherwise the whole
    /// body would wait in the channel's buffer for as long as the client takes.
    public func send(status: HTTPResponse.Status, headers: HTTPFields, body: [UInt8], rows: Int? = nil) {
        // Larger than a stream's memory spool, with a body to send (not HEAD, 204 or 304), not
        // coded by its producer, and sent as it is (the rule for whole bodies gives no coding).
        if let spool = self.streams?.spool, body.count > spool.configuration.memoryBytesPerStream, self.request.method != .head,
            status.carriesBody, !headers.contains(.contentEncoding)
        {
            let whole = ContentCoding.forWholeBody(
                count: body.count, fields: headers, acceptEncoding: self.request.headers[values: .acceptEncoding].first,
                compression: self.compresses, isHead: false)
            if whole.coding == nil {
                self.sendThroughSpool(status: status, headers: headers, body: body, rows: rows, spool: spool, varies: whole.varies)
                return
            }
        }
        self.onLoop { [number] in $0.sendResponse(number, status: status, headers: headers, body: body, contentType: nil, rows: rows) }
    }

    /// Writes `body` into a sink with the spool on a feeder thread, with `Content-Length` (so the
    /// sink's chunks are the body's bytes, unframed), then ends the response as a stream ends.
    /// `varies`: another request could get the body coded (`Vary: Accept-Encoding`).
    private func sendThroughSpool(
        status: HTTPResponse.Status, headers: HTTPFields, body: [UInt8], rows: Int?, spool: SpoolService, varies: Bool
    ) {
        var headers = headers
        if varies { ContentCoding.varyByAcceptEncoding(&headers) }
        headers.replaceOrAdd(.contentLength, String(body.count))
        let sink = self.makeSink(status: status, headers: headers, encoder: nil)
        spool.feeders.submit { state in
            let result: Result<Int, any Error>
            do {
                guard case .active = state else { throw StreamingResponseSink.ChannelClosed() }
                try body.withUnsafeBytes { bytes in
                    var start = 0
                    while start < bytes.count {
                        let end = min(start + ChunkedOutput.chunkSize, bytes.count)
                        try sink.write(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
                        start = end
                    }
                }
                try sink.finish(UnsafeRawBufferPointer(start: nil, count: 0))
                result = .success(rows ?? 0)
            } catch {
                result = .failure(error)
            }
            self.onLoop { [number = self.number] in $0.streamDone(number, sink: sink, result: result) }
        }
    }

    /// Answers 304 Not Modified, keeping of `headers` only what a 304 repeats of the 200 it
    /// stands for (RFC 9110 §15.4.5: `ETag`, `Cache-Control`, `Vary`, `Expires`,
    /// `Content-Location`).
    ///
    /// The 304's `ETag` is the one the 200 would carry: marked with the coding the request
    /// negotiates when the 200 would be coded. `streamed`: the 200 would be a stream
    /// (``startStream(status:headers:)``), which is coded whenever a coding is negotiated. A
    /// body sent whole is coded only above ``ContentCoding/minimumWholeBody``, which a 304
    /// cannot see: its tag is marked when the request's `If-None-Match` names the marked tag,
    /// the one such a 200 carried.
    public func sendNotModified(_ headers: HTTPFields, streamed: Bool = false) {
        var kept: HTTPFields = headers.filter { Self.notModifiedFields.contains($0.name) }
        if let coding = self.coding(headers), streamed || self.ifNoneMatchNames(kept, markedWith: coding) { coding.mark(&kept) }
        self.onLoop { [number, kept] in $0.sendResponse(number, status: .notModified, headers: kept, body: [], contentType: nil) }
    }

    /// Whether the request's `If-None-Match` lists the `ETag` of `fields` marked with `coding`.
    private func ifNoneMatchNames(_ fields: HTTPFields, markedWith coding: ContentCoding) -> Bool {
        guard let tag = fields[values: .eTag].first, let ifNoneMatch = self.ifNoneMatch else { return false }
        let marked = EntityTag.marking(tag, coding: coding)
        return ifNoneMatch.split(separator: ",").contains { $0.trimmingBlanks == marked }
    }

    private static let notModifiedFields: Set<HTTPField.Name> = [.eTag, .cacheControl, .vary, .expires, .contentLocation]

    // MARK: Streamed responses

    /// Prepares a streamed response and returns the sink its body goes into. The head
    /// (`status`, `headers`, chunked) is sent with the first chunk the sink writes; a body
    /// that ends before any chunk is sent whole instead (see ``finishStream(_:result:timing:trailers:)``).
    /// When the client goes away, the sink closes and runs its close handler.
    ///
    /// The body is compressed by the sink, on the producer's thread, with the best coding the
    /// request accepts (``ContentCoding/negotiate(_:)``; not for HEAD): the head then says
    /// `Content-Encoding`, `Vary` names `Accept-Encoding`, and an `ETag` is marked with the
    /// coding, so each representation has its own tag.
    public func startStream(status: HTTPResponse.Status, headers: HTTPFields) -> StreamingResponseSink {
        var headers = headers
        var encoder: (any StreamEncoder)?
        if let coding = self.coding(headers) {
            do {
                encoder = try coding.makeEncoder()
                headers.replaceOrAdd(.contentEncoding, coding.rawValue)
                coding.mark(&headers)
            } catch {
                self.logger.warning(
                    "cannot start \(coding.rawValue) compression; the stream goes uncompressed",
                    metadata: ["request.id": "\(self.request.id)", "reason": "\(error)"])
            }
        }
        self.metrics?.streamsInFlight.increment()
        return self.makeSink(status: status, headers: headers, encoder: encoder)
    }

    /// Prepares an event stream (`200`, `text/event-stream`, chunked) and returns its sink, fed
    /// by ``StreamingResponseSink/offer(_:whenWritable:)``: never compressed (each event must
    /// reach the client when it is written) nor spooled (its producer keeps what the client
    /// has not taken yet). Ends with ``finishStream(_:result:timing:trailers:)`` like any stream.
    /// Says `X-Accel-Buffering: no`: behind nginx as configured by default, the events would
    /// wait in its buffers, and a client would hear of no change until kilobytes of them had.
    public func startEventStream(headers: HTTPFields) -> StreamingResponseSink {
        var headers = headers
        headers.replaceOrAdd(.contentType, "text/event-stream")
        headers.replaceOrAdd(.accelBuffering, "no")
        self.metrics?.streamsInFlight.increment()
        return self.makeSink(status: .ok, headers: headers, encoder: nil, spooled: false)
    }

    /// A sink for this exchange's body, with the spool when the server has one and `spooled`,
    /// attached to the connection with the head it sends before the first chunk.
    private func makeSink(
        status: HTTPResponse.Status, headers: HTTPFields, encoder: (any StreamEncoder)?, spooled: Bool = true
    ) -> StreamingResponseSink {
        let handler = self.handler
        let number = self.number
        let sink = StreamingResponseSink(
            allocator: self.allocator, hop: self.hop, maximumChunksInFlight: self.chunksInFlight, spool: spooled ? self.streams?.spool : nil,
            requestID: self.request.id, encoder: encoder
        ) { chunk, isFirst in
            handler.value.streamChunk(number, chunk, isFirst: isFirst)
        }
        self.onLoop { [number, headers] in $0.attachSink(number, sink: sink, status: status, headers: headers) }
        return sink
    }

    /// The coding a body of this request with `headers` is sent in (a whole one only above
    /// ``ContentCoding/minimumWholeBody``): none for HEAD, with compression off, or when the
    /// producer encoded the body itself.
    private func coding(_ headers: HTTPFields) -> ContentCoding? {
        guard self.compresses, self.request.method != .head, !headers.contains(.contentEncoding) else { return nil }
        return ContentCoding.negotiate(self.request.headers[values: .acceptEncoding].first)
    }

    /// Ends the stream `sink` belongs to: with the rest of the body and `trailers` on success
    /// (`rows` written), or, on failure, with an error response when no chunk went out, and by
    /// cutting the body short (no last chunk) when one did. `timing` is a `Server-Timing` value
    /// for a response that is still sent whole.
    public func finishStream(_ sink: StreamingResponseSink, result: Result<Int, any Error>, timing: String? = nil, trailers: HTTPFields? = nil) {
        self.metrics?.streamsInFlight.decrement()
        self.onLoop { [number] in $0.streamDone(number, sink: sink, result: result, timing: timing, trailers: trailers) }
    }

    /// Counts a streamed response against the per-address stream cap
    /// (``ServerConfiguration/maximumStreamsPerAddress``) until the exchange ends; call before
    /// the stream leases anything. Throws a 429 ``HTTPError`` (with `Retry-After`) when the
    /// client already has that many streams.
    public func admitStream() throws {
        guard let streams = self.streams else { return }
        guard let ticket = streams.admission.ticket(for: self.clientAddress) else {
            streams.metrics?.refused.increment()
            throw HTTPError(status: .tooManyRequests, message: "too many concurrent streams from this client", headers: [.retryAfter: "1"])
        }
        self.onLoop { [number] in $0.attachStreamTicket(number, ticket: ticket) }
    }

    // MARK: Failures and measurements

    /// Answers with the error response for `error` (``ErrorResponse``), unless a response was
    /// already sent.
    func sendFailure(_ error: any Error) {
        self.onLoop { [number] in $0.sendFailure(number, error: error) }
    }

    private func onLoop(_ body: @escaping @Sendable (HTTPConnectionHandler) -> Void) {
        let handler = self.handler
        self.hop.execute { body(handler.value) }
    }
}
