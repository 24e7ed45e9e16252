import Synchronization

/// A request body sent as it is made (``TransportRequest/bodyStream``): one producer writes
/// bytes, the transport reads them as the connection takes them.
///
/// Contract:
/// - ``write(_:)`` appends bytes and suspends while ``limit`` bytes or more wait unread, so
///   the body never piles up in memory (backpressure from the socket to the producer). It
///   returns false, taking nothing, once the reader has gone (``cancel()``): stop producing.
/// - ``finish(throwing:)`` ends the body: the reader gets what is left, then the end (or the
///   error, which fails the request: the server sees the body cut short).
/// - Each element the reader gets is everything written since its last read (never empty):
///   small writes travel together when the network is slower than the producer, and at once
///   when it is not.
/// - Cancelling the task of a suspended ``write(_:)`` or read ends the stream as
///   ``cancel()`` does.
/// - One producer, one reader: a second iterator reads nothing.
public final class SpoutBodyStream: AsyncSequence, Sendable {
    public typealias Element = [UInt8]

    private struct State {
        var buffered: [UInt8] = []
        var end: End?
        var iterated = false
        var reader: CheckedContinuation<Void, Never>?
        var writer: CheckedContinuation<Void, Never>?
    }

    private enum End {
        case finished
        case failed(any Error)
        case cancelled
    }

    /// Unread bytes at which ``write(_:)`` waits.
    public let limit: Int
    private let state = Mutex(State())

    public init(limit: Int = 64 * 1024) {
        self.limit = Swift.max(1, limit)
    }

    // MARK: The producer's side

    /// Appends `bytes` (at once), then waits while ``limit`` bytes or more are unread. False
    /// when the reader has gone: nothing will be read any more.
    public func write(_ bytes: [UInt8]) async -> Bool {
        let (accepted, reader) = self.state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            guard state.end == nil else { return (false, nil) }
            state.buffered += bytes
            defer { state.reader = nil }
            return (true, state.reader)
        }
        reader?.resume()
        guard accepted else { return false }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waits = self.state.withLock { state -> Bool in
                    guard state.end == nil, state.buffered.count >= self.limit else { return false }
                    state.writer = continuation
                    return true
                }
                if !waits { continuation.resume() }
            }
        } onCancel: {
            self.cancel()
        }
        return self.state.withLock { state in
            if case .cancelled? = state.end { return false }
            return true
        }
    }

    /// Ends the body: with `error`, the reader throws it instead of reaching the end.
    public func finish(throwing error: (any Error)? = nil) {
        self.end(error.map { .failed($0) } ?? .finished)
    }

    // MARK: The reader's side

    /// The reader will read no more: a waiting ``write(_:)`` returns false, and so do later ones.
    public func cancel() {
        self.end(.cancelled)
    }

    private func end(_ end: End) {
        let (reader, writer) = self.state.withLock { state -> (CheckedContinuation<Void, Never>?, CheckedContinuation<Void, Never>?) in
            if state.end == nil { state.end = end }
            defer {
                state.reader = nil
                state.writer = nil
            }
            return (state.reader, state.writer)
        }
        reader?.resume()
        writer?.resume()
    }

    /// The next bytes, nil at the end.
    fileprivate func next() async throws -> [UInt8]? {
        while true {
            let (taken, writer) = self.state.withLock { state -> (Result<[UInt8]?, any Error>?, CheckedContinuation<Void, Never>?) in
                if !state.buffered.isEmpty {
                    let bytes = state.buffered
                    state.buffered = []
                    defer { state.writer = nil }
                    return (.success(bytes), state.writer)
                }
                switch state.end {
                case .finished?, .cancelled?: return (.success(nil), nil)
                case .failed(let error)?: return (.failure(error), nil)
                case nil: return (nil, nil)
                }
            }
            writer?.resume()
            if let taken { return try taken.get() }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let waits = self.state.withLock { state -> Bool in
                        guard state.end == nil, state.buffered.isEmpty else { return false }
                        state.reader = continuation
                        return true
                    }
                    if !waits { continuation.resume() }
                }
            } onCancel: {
                self.cancel()
            }
        }
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        fileprivate let stream: SpoutBodyStream?

        public mutating func next() async throws -> [UInt8]? {
            try await self.stream?.next()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        let first = self.state.withLock { state -> Bool in
            defer { state.iterated = true }
            return !state.iterated
        }
        return AsyncIterator(stream: first ? self : nil)
    }
}
