import Foundation
import HTTPTypes

/// A client of a Spout server: rows decoded as they stream, single objects, writes, typed
/// errors, `Link` paging and an optional on-disk cache (docs/client.md).
///
/// ```swift
/// let client = SpoutClient(baseURL: URL(string: "http://127.0.0.1:8080")!)
/// for try await employee in try await client.rows(Employee.self, path: "/employees") {
///     print(employee.firstName)   // the first row prints while the server still sends
/// }
/// ```
///
/// Thread-safe; one client serves any number of concurrent calls.
public final class SpoutClient: Sendable {
    /// The server, `https://host:port` or `http://host:port` (a path prefix is kept).
    public let baseURL: URL
    public let configuration: SpoutClientConfiguration
    let transport: any SpoutTransport
    let cache: ResponseCache?

    /// - Parameters:
    ///   - baseURL: the server; paths are appended to it.
    ///   - configuration: date format, row format, headers, cache.
    ///   - transport: how requests travel; ``defaultTransport()`` unless given (for TLS
    ///     settings, pass an ``NIOHTTPTransport`` made with them).
    public init(
        baseURL: URL, configuration: SpoutClientConfiguration = SpoutClientConfiguration(),
        transport: any SpoutTransport = SpoutClient.defaultTransport()
    ) {
        self.baseURL = baseURL
        self.configuration = configuration
        self.transport = transport
        self.cache = configuration.cache.map { ResponseCache.shared(directory: $0.directory) }
    }

    /// The rows of a streamed GET, each decoded as `type` as soon as its bytes arrived.
    ///
    /// Returns once the response head arrived; an error status throws here
    /// (``SpoutClientError/server(_:)``, naming the parameter at fault). The sequence is read
    /// once; it holds one row and one network read at a time, never the whole body, and a
    /// body cut short throws ``SpoutClientError/truncatedBody`` instead of ending.
    ///
    /// - Parameters:
    ///   - allPages: follow each response's `Link: <…>; rel="next"` (same origin only) and
    ///     continue with the next page's rows.
    public func rows<Row: Decodable>(
        _ type: Row.Type, path: String, query: [URLQueryItem] = [], allPages: Bool = false
    ) async throws -> SpoutRows<Row> {
        let url = try RequestTarget.url(base: self.baseURL, path: path, query: query)
        let exchange = try await self.get(url, accept: self.configuration.rowFormat.accept)
        return SpoutRows(client: self, first: exchange, allPages: allPages)
    }

    /// A single JSON object (`result: object` endpoints, such as `/employees/{n}`).
    public func object<Value: Decodable>(_ type: Value.Type, path: String, query: [URLQueryItem] = []) async throws -> Value {
        try await self.objectResponse(type, path: path, query: query).value
    }

    /// Like ``object(_:path:query:)``, with where the body came from (``ResponseSource``)
    /// and the response headers.
    public func objectResponse<Value: Decodable>(
        _ type: Value.Type, path: String, query: [URLQueryItem] = []
    ) async throws -> SpoutObject<Value> {
        let url = try RequestTarget.url(base: self.baseURL, path: path, query: query)
        let exchange = try await self.get(url, accept: "application/json")
        let bytes = try await Self.readWhole(exchange)
        do {
            let value = try self.configuration.dateFormat.makeDecoder().decode(type, from: Data(bytes))
            return SpoutObject(value: value, source: exchange.source, headers: exchange.headers)
        } catch {
            throw SpoutClientError.decoding(row: 0, String(describing: error))
        }
    }

    /// A stored file (an endpoint with `result: bytes`: an image, a PDF) as its bytes, with the
    /// response's headers (`Content-Type`) and where they came from. It goes through the cache
    /// as every GET does: an image shown once is revalidated by its `ETag` (`304`, no bytes
    /// sent again) and, with ``SpoutCacheConfiguration/staleIfUnavailable``, loads from disk
    /// when the service cannot be reached.
    /// - Parameter accept: the `Accept` sent (`image/*` from an image loader); a file of
    ///   another type is a 406 (``SpoutClientError/server(_:)``).
    public func bytes(path: String, query: [URLQueryItem] = [], accept: String = "*/*") async throws -> SpoutObject<Data> {
        let url = try RequestTarget.url(base: self.baseURL, path: path, query: query)
        let exchange = try await self.get(url, accept: accept)
        return SpoutObject(value: Data(try await Self.readWhole(exchange)), source: exchange.source, headers: exchange.headers)
    }

    /// A write: POST, PUT, PATCH or DELETE with an optional form or JSON body. A status of
    /// 400 or more throws ``SpoutClientError/server(_:)``; otherwise the reply carries the
    /// status, the headers (`Location`) and the body (decode it with ``SpoutReply/decode(_:)``).
    public func send(
        _ method: HTTPRequest.Method, path: String, query: [URLQueryItem] = [], body: SpoutRequestBody? = nil
    ) async throws -> SpoutReply {
        let url = try RequestTarget.url(base: self.baseURL, path: path, query: query)
        let response = try await self.performWrite(method, url: url, body: body, headers: self.headers(renewingToken: false))
        guard response.status < 400 else { throw SpoutClientError.server(await ErrorBodyDecoder.error(from: response)) }
        return try await self.reply(response, url: url)
    }

    /// A write of `body` to `url` with `headers` (the credentials and any conditions), asking
    /// for JSON; the response whatever its status.
    func performWrite(
        _ method: HTTPRequest.Method, url: URL, body: SpoutRequestBody?, headers: HTTPFields
    ) async throws -> TransportResponse {
        var headers = headers
        headers[.accept] = "application/json"
        if let body { headers[.contentType] = body.contentType }
        return try await self.performAuthorized(
            TransportRequest(method: method, url: url, headers: headers, body: body?.bytes ?? (method == .delete ? nil : [])))
    }

    /// A write's response with its whole body.
    func reply(_ response: TransportResponse, url: URL) async throws -> SpoutReply {
        let exchange = Exchange(url: url, status: response.status, headers: response.headers, body: response.body, source: .network)
        return SpoutReply(
            status: response.status, headers: response.headers, body: Data(try await Self.readWhole(exchange)),
            dateFormat: self.configuration.dateFormat)
    }

    /// The platform's transport: ``URLSessionTransport`` on Apple platforms (the system's
    /// networking, TLS and proxy settings), ``NIOHTTPTransport`` elsewhere; each call makes a
    /// new one, with its own connection pool.
    public static func defaultTransport() -> any SpoutTransport {
        #if canImport(Darwin)
        URLSessionTransport()
        #else
        NIOHTTPTransport()
        #endif
    }

    /// Reads an exchange's whole body (a single object or a write's answer), storing it in the
    /// cache when the exchange has a writer.
    static func readWhole(_ exchange: Exchange) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        do {
            while let chunk = try await exchange.body.nextChunk() {
                exchange.cacheWriter?.append(chunk)
                bytes += chunk
            }
        } catch {
            exchange.cacheWriter?.abandon()
            throw error
        }
        exchange.cacheWriter?.commit()
        return bytes
    }
}
