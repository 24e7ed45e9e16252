import Foundation

extension SpoutClient {
    /// The rows of a GET as an app shows them: the cache's stored copy at once, without waiting
    /// for the network, then the server's rows if they differ (stale-while-revalidate).
    ///
    /// - The first element is the stored copy (``ResponseSource/stale(storedAt:)``), when the
    ///   cache holds one for this URL and caller (and it decodes as `Row`); it is read from disk
    ///   before the request goes out.
    /// - Then the request goes out with the copy's `ETag`: a `200` is the second element
    ///   (``ResponseSource/network``, and it replaces the stored copy); a `304` ends the sequence
    ///   without a second element (the copy shown is current).
    /// - A failure (offline, a `5xx`, a `4xx`) ends the sequence by throwing it, after the stored
    ///   copy: the app keeps showing the copy and can say why it is not fresh.
    ///   ``SpoutCacheConfiguration/staleIfUnavailable`` plays no part here.
    ///
    /// Without a cache (or a copy), the only element is the server's answer. Each element holds
    /// the whole result (a screen's list), not a stream; only the first page is read. Cancelling
    /// the task that iterates cancels the request.
    public func rowsStoredFirst<Row: Decodable & Sendable>(
        _ type: Row.Type, path: String, query: [URLQueryItem] = []
    ) -> AsyncThrowingStream<SpoutObject<[Row]>, any Error> {
        self.storedFirst(path: path, query: query, accept: self.configuration.rowFormat.accept) { client, exchange in
            var rows: [Row] = []
            for try await row in SpoutRows<Row>(client: client, first: exchange, allPages: false) { rows.append(row) }
            return rows
        }
    }

    /// A single JSON object as ``rowsStoredFirst(_:path:query:)`` gives rows: the stored copy at
    /// once, then the server's if it differs.
    public func objectStoredFirst<Value: Decodable & Sendable>(
        _ type: Value.Type, path: String, query: [URLQueryItem] = []
    ) -> AsyncThrowingStream<SpoutObject<Value>, any Error> {
        self.storedFirst(path: path, query: query, accept: "application/json") { client, exchange in
            let bytes = try await Self.readWhole(exchange)
            do {
                return try client.configuration.dateFormat.makeDecoder().decode(Value.self, from: Data(bytes))
            } catch {
                throw SpoutClientError.decoding(row: 0, String(describing: error))
            }
        }
    }

    /// The stored copy of a GET, then the network's answer unless it is a `304`, each decoded
    /// by `decode`.
    private func storedFirst<Value: Sendable>(
        path: String, query: [URLQueryItem], accept: String,
        decode: @escaping @Sendable (SpoutClient, Exchange) async throws -> Value
    ) -> AsyncThrowingStream<SpoutObject<Value>, any Error> {
        let (stream, continuation) = AsyncThrowingStream<SpoutObject<Value>, any Error>.makeStream()
        let task = Task {
            do {
                let url = try RequestTarget.url(base: self.baseURL, path: path, query: query)
                // A copy that no longer decodes (the app's type changed) is skipped, not thrown.
                if let stored = try await self.storedCopy(url, accept: accept), let value = try? await decode(self, stored) {
                    continuation.yield(SpoutObject(value: value, source: stored.source, headers: stored.headers))
                }
                let fresh = try await self.get(url, accept: accept, staleAllowed: false)
                if fresh.source == .network {
                    continuation.yield(SpoutObject(value: try await decode(self, fresh), source: fresh.source, headers: fresh.headers))
                } else {
                    fresh.body.close()
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
