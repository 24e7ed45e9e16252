import Foundation
import HTTPTypes

/// A GET's response as the client uses it: from the network or from the cache, with the
/// cache writer that copies it when it is to be stored.
struct Exchange: Sendable {
    /// The URL asked for (relative `Link` targets resolve against it).
    var url: URL
    var status: Int
    var headers: HTTPFields
    var body: any ResponseBodyReader
    var source: ResponseSource
    var cacheWriter: CacheWriter?

    init(
        url: URL, status: Int, headers: HTTPFields, body: any ResponseBodyReader, source: ResponseSource,
        cacheWriter: CacheWriter? = nil
    ) {
        self.url = url
        self.status = status
        self.headers = headers
        self.body = body
        self.source = source
        self.cacheWriter = cacheWriter
    }
}

extension SpoutClient {
    /// A GET of `url`, through the cache when there is one.
    ///
    /// With a cache: a stored copy's `ETag` goes out as `If-None-Match`, and `304` answers
    /// from the copy (``ResponseSource/revalidated``); a `200` is copied into the cache as it
    /// is read (unless `Cache-Control: no-store`); when the server cannot be reached, stays
    /// silent past the transport's read timeout or answers `5xx`, and the policy allows, the
    /// copy answers (``ResponseSource/stale(storedAt:)``). Any other status of 300 or more
    /// throws ``SpoutClientError/server(_:)``.
    ///
    /// - Parameter staleAllowed: overrides the policy's ``SpoutCacheConfiguration/staleIfUnavailable``
    ///   (false once the stored copy was shown: the failure is the caller's news then).
    func get(_ url: URL, accept: String, staleAllowed: Bool? = nil) async throws -> Exchange {
        var headers = try await self.headers(renewingToken: false)
        headers[.accept] = accept
        guard let cache = self.cache, let policy = self.configuration.cache else {
            let response = try await self.performAuthorized(TransportRequest(method: .get, url: url, headers: headers))
            guard (200..<300).contains(response.status) else {
                throw SpoutClientError.server(await ErrorBodyDecoder.error(from: response))
            }
            return Exchange(url: url, status: response.status, headers: response.headers, body: response.body, source: .network)
        }

        let key = ResponseCache.key(url: url, accept: accept, identity: CacheIdentity.of(headers))
        let hit = await cache.lookup(key)
        if let etag = hit?.entry.etag { headers[.ifNoneMatch] = etag }
        let allowsStale = staleAllowed ?? policy.staleIfUnavailable
        let response: TransportResponse
        do {
            response = try await self.performAuthorized(TransportRequest(method: .get, url: url, headers: headers))
        } catch let error as SpoutClientError {
            // Unreachable or silent: no answer at all.
            switch error {
            case .connectionFailed, .timedOut:
                guard allowsStale, let hit else { throw error }
                return self.answer(from: hit, cache: cache, url: url, source: .stale(storedAt: hit.entry.storedAt))
            default:
                hit?.body.close()
                throw error
            }
        }

        if response.status == 304 {
            // A 304 has no body: reading its end (at once) returns the connection to the pool
            // for the next call, where close() would leave it to a later check.
            _ = try? await response.body.nextChunk()
            response.body.close()
            guard let hit else { throw SpoutClientError.unexpectedNotModified }
            return self.answer(from: hit, cache: cache, url: url, source: .revalidated)
        }
        if (200..<300).contains(response.status) {
            hit?.body.close()
            let noStore = response.headers[.cacheControl]?.lowercased().contains("no-store") ?? false
            let stores = response.status == 200 && !noStore
            let writer = stores ? cache.writer(key: key, headers: response.headers, maximumBytes: policy.maximumBytes) : nil
            return Exchange(
                url: url, status: response.status, headers: response.headers, body: response.body, source: .network,
                cacheWriter: writer)
        }
        if response.status >= 500, allowsStale, let hit {
            response.body.close()
            return self.answer(from: hit, cache: cache, url: url, source: .stale(storedAt: hit.entry.storedAt))
        }
        hit?.body.close()
        throw SpoutClientError.server(await ErrorBodyDecoder.error(from: response))
    }

    /// The configured headers with the token provider's `Authorization`, if there is one.
    func headers(renewingToken renew: Bool) async throws -> HTTPFields {
        var headers = self.configuration.headers
        if let provider = self.configuration.tokenProvider {
            headers[.authorization] = "Bearer " + (try await provider.token(renew))
        }
        return headers
    }

    /// `request` through the transport (a GET through ``performGET(_:)``); a `401` while a
    /// token provider is configured asks it for a renewed token and sends the request once
    /// more with it (``SpoutTokenProvider``).
    func performAuthorized(_ request: TransportRequest) async throws -> TransportResponse {
        let send = { (request: TransportRequest) async throws -> TransportResponse in
            request.method == .get ? try await self.performGET(request) : try await self.transport.perform(request)
        }
        let response = try await send(request)
        guard response.status == 401, self.configuration.tokenProvider != nil else { return response }
        // The refusal's body is small (a JSON error): read to its end so that the connection
        // goes back to the pool for the second attempt.
        while try await response.body.nextChunk() != nil {}
        response.body.close()
        var renewed = request
        renewed.headers[.authorization] = try await self.headers(renewingToken: true)[.authorization]
        return try await send(renewed)
    }

    /// A GET through the transport, sent again after a pause while no response arrived at all
    /// and the retry policy allows (``SpoutRetryPolicy``). Once `perform` returned, the
    /// response is the caller's: nothing after it is retried.
    func performGET(_ request: TransportRequest) async throws -> TransportResponse {
        let policy = self.configuration.retry
        var attempt = 1
        while true {
            do {
                return try await self.transport.perform(request)
            } catch SpoutClientError.connectionFailed where attempt < policy.maximumAttempts {
                attempt += 1
                try await Task.sleep(for: policy.backoff(before: attempt))
            }
        }
    }

    /// The stored copy of a GET of `url` as an exchange marked ``ResponseSource/stale(storedAt:)``,
    /// without asking the server; nil without a cache or a copy for the caller.
    func storedCopy(_ url: URL, accept: String) async throws -> Exchange? {
        guard let cache = self.cache else { return nil }
        let headers = try await self.headers(renewingToken: false)
        let key = ResponseCache.key(url: url, accept: accept, identity: CacheIdentity.of(headers))
        guard let hit = await cache.lookup(key) else { return nil }
        return self.answer(from: hit, cache: cache, url: url, source: .stale(storedAt: hit.entry.storedAt))
    }

    /// An exchange answered from a stored copy, with the headers that were stored with it.
    private func answer(from hit: ResponseCache.Hit, cache: ResponseCache, url: URL, source: ResponseSource) -> Exchange {
        cache.markUsed(hit.entry.key)
        var headers = HTTPFields()
        if let contentType = hit.entry.contentType { headers[.contentType] = contentType }
        if let etag = hit.entry.etag { headers[.eTag] = etag }
        for link in hit.entry.links ?? [] { headers.append(HTTPField(name: .webLink, value: link)) }
        return Exchange(url: url, status: 200, headers: headers, body: hit.body, source: source)
    }
}
