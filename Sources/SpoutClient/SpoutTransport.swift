import Foundation
import HTTPTypes

/// What carries one HTTP exchange for ``SpoutClient``: send a request, hand back the status
/// and headers as soon as they arrive, and the body as chunks read on demand.
///
/// The client needs nothing more of a transport, so another one (an Apple `URLSession`
/// transport using `bytes(for:)`, say) fits behind this protocol without touching the
/// decoding, paging or caching. The default is ``URLSessionTransport`` on Apple platforms and
/// ``NIOHTTPTransport`` elsewhere (``SpoutClient/defaultTransport()``).
///
/// Contract:
/// - ``perform(_:)`` returns once the response head has arrived (any status), or throws
///   ``SpoutClientError/connectionFailed(_:)`` when no response head was received (the client
///   retries GETs on it), or ``SpoutClientError/certificateRejected(_:)`` when TLS refused the
///   server.
/// - The body's bytes are decoded (no `Content-Encoding` left to undo): the client splits rows
///   and caches exactly what ``ResponseBodyReader/nextChunk()`` returns.
/// - The body is read only when asked: a consumer that does not call
///   ``ResponseBodyReader/nextChunk()`` stops the transport from reading the socket.
public protocol SpoutTransport: Sendable {
    func perform(_ request: TransportRequest) async throws -> TransportResponse
}

/// One request as the client built it: an absolute `http` or `https` URL, headers, an
/// optional body, given whole or sent as it is made.
public struct TransportRequest: Sendable {
    public var method: HTTPRequest.Method
    public var url: URL
    public var headers: HTTPFields
    public var body: [UInt8]?
    /// A body of unknown length sent as its producer writes it (chunked), read only as the
    /// connection takes it (a bulk write's records); when set, ``body`` is not sent. A
    /// transport that ends the exchange before the body's end cancels it
    /// (``SpoutBodyStream/cancel()``), which tells the producer to stop.
    public var bodyStream: SpoutBodyStream?

    public init(method: HTTPRequest.Method, url: URL, headers: HTTPFields = [:], body: [UInt8]? = nil, bodyStream: SpoutBodyStream? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.bodyStream = bodyStream
    }
}

/// A response head and its body, still to be read.
public struct TransportResponse: Sendable {
    public var status: Int
    public var headers: HTTPFields
    public var body: any ResponseBodyReader

    public init(status: Int, headers: HTTPFields, body: any ResponseBodyReader) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// A response body read one chunk at a time, by one consumer.
///
/// Contract: ``nextChunk()`` returns the next bytes (never an empty array), nil once the body
/// ended as the protocol says it ends (the terminating chunk, or `Content-Length` bytes), and
/// throws ``SpoutClientError/truncatedBody`` when the connection closed before that.
/// ``close()`` gives the connection up early; calling it after the end is harmless.
public protocol ResponseBodyReader: Sendable {
    func nextChunk() async throws -> [UInt8]?
    func close()
    /// The trailer fields that followed a chunked body, once ``nextChunk()`` returned nil
    /// (empty before, and for a body without any).
    var trailers: HTTPFields { get }
}

extension ResponseBodyReader {
    public var trailers: HTTPFields { HTTPFields() }
}
