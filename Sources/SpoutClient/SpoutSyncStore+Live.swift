import Foundation
import HTTPTypes
import Synchronization

extension SpoutSyncStore {
    /// Keeps the store current for as long as the calling task runs (docs/client.md, "Live
    /// sync"): it syncs, then follows the endpoint's live notices (`GET` with `Accept:
    /// text/event-stream`, the store's query and the client's credentials, `since` the
    /// store's cursor) and syncs on each `change` event. Observers of ``snapshots()`` see each
    /// change without the app calling ``sync()``.
    ///
    /// ```swift
    /// .task { try? await store.keepCurrent() }   // SwiftUI: ends when the view goes away
    /// ```
    ///
    /// Contract:
    /// - Events that arrive while a sync runs make one more sync after it, not one each.
    /// - When the stream ends (the server ends it when the caller's token expires) it syncs
    ///   again and reconnects after the pause the server asks for (`retry:`); when the
    ///   network or the server fails (no connection, a `5xx`, a `429`, a body cut short, a
    ///   response that is not an event stream, nothing at all — not even a heartbeat — for
    ///   `silenceLimit`) it pauses, then syncs again and reconnects. Pauses start at the
    ///   client's ``SpoutRetryPolicy/initialBackoff`` and double up to `maximumPause`; a
    ///   stream that opens starts them over. Since each stream starts from the cursor of the
    ///   sync before it, a change made while the client was away is told at once: none is
    ///   missed.
    /// - Cancelling the task closes the connection and returns (after a sync already running,
    ///   which is joined, not cancelled: ``sync()``).
    /// - It throws what retrying cannot mend, ending the live sync: a `4xx` other than `408`,
    ///   `429`, `410` and a `400` naming `since` (a `401` after the token provider's renewed
    ///   token, a `406` for an endpoint that is not syncable), a rejected certificate,
    ///   credentials of another identity than the store's, a store file that cannot be written.
    ///
    /// - Parameters:
    ///   - silenceLimit: how long the stream may stay silent before the connection is taken
    ///     for dead; longer than the server's heartbeat (`server.heartbeatSeconds`, 15 s).
    ///   - maximumPause: the longest pause between reconnections.
    public nonisolated func keepCurrent(silenceLimit: Duration = .seconds(45), maximumPause: Duration = .seconds(30)) async throws {
        let policy = self.client.configuration.retry
        let pauses = SpoutRetryPolicy(initialBackoff: policy.initialBackoff, maximumBackoff: max(policy.initialBackoff, maximumPause))
        var failures = 0
        while !Task.isCancelled {
            var pause = pauses.initialBackoff
            do {
                try await self.sync()
                let stream = try await self.openEvents()
                failures = 0
                defer { stream.close() }
                if let asked = try await self.follow(stream, silenceLimit: silenceLimit) { pause = asked }
            } catch where Task.isCancelled {
                return
            } catch let error as SpoutClientError where Self.isPassing(error) {
                failures += 1
                pause = pauses.backoff(before: failures + 1)
            }
            do { try await Task.sleep(for: pause) } catch { return }
        }
    }

    /// Whether a pause and a reconnection may mend `error`.
    static func isPassing(_ error: SpoutClientError) -> Bool {
        switch error {
        case .connectionFailed, .timedOut, .truncatedBody, .malformedBody:
            return true
        case .server(let error):
            return error.status >= 500 || [408, 410, 429].contains(error.status) || (error.status == 400 && error.parameter == "since")
        case .certificateRejected, .decoding, .invalidURL, .invalidConfiguration, .unexpectedNotModified, .storeFailed:
            return false
        }
    }

    /// The endpoint's event stream from the store's cursor, its head read; throws for an
    /// error status or a body that is not `text/event-stream`.
    private nonisolated func openEvents() async throws -> any ResponseBodyReader {
        var headers = try await self.client.headers(renewingToken: false)
        try self.owner.check(headers)
        headers[.accept] = "text/event-stream"
        let url = try self.url(since: try await self.storedCursor())
        let response = try await self.client.performAuthorized(TransportRequest(method: .get, url: url, headers: headers))
        guard (200..<300).contains(response.status) else { throw SpoutClientError.server(await ErrorBodyDecoder.error(from: response)) }
        guard response.headers[.contentType]?.lowercased().hasPrefix("text/event-stream") == true else {
            response.body.close()
            throw SpoutClientError.malformedBody("the live notices' response is \(response.headers[.contentType] ?? "untyped"), not text/event-stream")
        }
        return response.body
    }

    /// Reads `stream` until it ends, syncing on each `change` event (those that arrive while a
    /// sync runs coalesce into one sync after it); returns the reconnection time the server
    /// asked for, if any. Throws ``SpoutClientError/timedOut(_:)`` when nothing arrived for
    /// `silenceLimit`, and what a read or a sync throws.
    private nonisolated func follow(_ stream: any ResponseBodyReader, silenceLimit: Duration) async throws -> Duration? {
        let (changes, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let heard = Heard()
        return try await withThrowingTaskGroup(of: Duration?.self) { group in
            group.addTask {
                var parser = ServerSentEventParser()
                while let chunk = try await stream.nextChunk() {
                    heard.flag.store(true, ordering: .relaxed)
                    for event in try parser.feed(chunk) where event.type == "change" { signal.yield() }
                }
                return parser.reconnectionTime
            }
            group.addTask {
                // Ends only when cancelled: the iteration of an AsyncStream stops then.
                for await _ in changes { try await self.sync() }
                return nil
            }
            group.addTask {
                while true {
                    try await Task.sleep(for: silenceLimit)
                    guard heard.flag.exchange(false, ordering: .relaxed) else {
                        throw SpoutClientError.timedOut("no live notice nor heartbeat for \(silenceLimit)")
                    }
                }
            }
            // The first child to finish is the reader at the stream's end, or one that threw.
            let asked = try await group.next() ?? nil
            group.cancelAll()
            return asked
        }
    }
}

/// Whether a live sync's stream sent anything since its watchdog last looked.
private final class Heard: Sendable {
    let flag = Atomic<Bool>(true)
}
