import SpoutHTTP
import Synchronization

/// One client's event stream of live notices: what it has not been sent yet, and why it ends.
///
/// Contract:
/// - Nothing here waits: a notice or heartbeat the connection cannot take now stays pending
///   and goes out when the channel can take it (``StreamingResponseSink/offer(_:whenWritable:)``).
/// - Pending notices coalesce: one is kept, from the oldest notice's `from` to the newest's
///   `to` (``notify(from:to:)``), so a client that reads slowly holds constant memory here.
/// - It ends once (``finish(_:)``): the client left, its token expired, it read too slowly,
///   or the server stops; the handler given to ``whenEnded(_:)`` is told why, once. No task
///   waits for the end, so an idle stream holds no suspended task (nor its frames) alive.
final class NoticeSubscriber: Sendable {
    /// Why an event stream ended.
    enum End: Sendable, Equatable {
        /// The client closed the connection.
        case left
        /// The caller's token expired (the stream ends cleanly; the client reconnects).
        case expired
        /// A notice stayed unread past ``LiveNoticeSettings/slowSubscriberLimit``.
        case dropped
    }

    private struct State {
        /// The notice not sent yet: sync from `from`; `to` is its event id.
        var pending: (from: String, to: String)?
        var lastWrite: ContinuousClock.Instant
        /// Since when a write has waited for the connection; nil while nothing waits.
        var waitingSince: ContinuousClock.Instant?
        var end: End?
        var onEnd: (@Sendable (End) -> Void)?
    }

    /// Unique in the process: how groups know their subscribers.
    let id: Int
    let sink: StreamingResponseSink
    /// When the caller's token expires; nil: never.
    let expires: ContinuousClock.Instant?
    private let metrics: NoticeMetrics?
    private let state: Mutex<State>

    private static let counter = Atomic<Int>(0)

    init(sink: StreamingResponseSink, expires: ContinuousClock.Instant?, metrics: NoticeMetrics?) {
        self.id = Self.counter.wrappingAdd(1, ordering: .relaxed).newValue
        self.sink = sink
        self.expires = expires
        self.metrics = metrics
        self.state = Mutex(State(lastWrite: .now))
    }

    /// The first bytes of the stream: the client's reconnection delay, in milliseconds.
    func open(retryMilliseconds: Int) {
        self.write(Array("retry: \(retryMilliseconds)\n\n".utf8))
    }

    /// The caller's result may have changed: sync from `from`; `to` is the event's id, where a
    /// reconnect resumes.
    func notify(from: String, to: String) {
        let sent = self.state.withLock { state -> Bool in
            guard state.end == nil else { return false }
            state.pending = (state.pending?.from ?? from, to)
            return self.flush(&state)
        }
        if sent { self.metrics?.events.increment() }
    }

    /// Called about once a second: ends an expired or too slow stream, writes a heartbeat to a
    /// quiet one.
    func tick(now: ContinuousClock.Instant, heartbeat: Duration, slowLimit: Duration) {
        if let expires = self.expires, now >= expires {
            self.finish(.expired)
            return
        }
        let (dropped, beat) = self.state.withLock { state -> (Bool, Bool) in
            guard state.end == nil else { return (false, false) }
            if let since = state.waitingSince, now - since >= slowLimit { return (true, false) }
            guard state.pending == nil, state.waitingSince == nil, now - state.lastWrite >= heartbeat else { return (false, false) }
            return (false, self.offer(Self.heartbeatBytes, &state))
        }
        if dropped {
            self.metrics?.dropped.increment()
            self.finish(.dropped)
        }
        if beat { self.metrics?.heartbeats.increment() }
    }

    /// Ends the stream for `reason`, unless it has ended already.
    func finish(_ reason: End) {
        let handler = self.state.withLock { state -> (@Sendable (End) -> Void)? in
            guard state.end == nil else { return nil }
            state.end = reason
            state.pending = nil
            defer { state.onEnd = nil }
            return state.onEnd
        }
        handler?(reason)
    }

    /// Calls `handler` once with why the stream ended: at once if it has ended already, else
    /// from ``finish(_:)``, on the thread that ends it. One handler at a time: a later call
    /// replaces an earlier one not called yet.
    func whenEnded(_ handler: @escaping @Sendable (End) -> Void) {
        let ended = self.state.withLock { state -> End? in
            if let end = state.end { return end }
            state.onEnd = handler
            return nil
        }
        if let ended { handler(ended) }
    }

    /// Waits until the stream ends; returns why (through ``whenEnded(_:)``).
    func ended() async -> End {
        await withCheckedContinuation { continuation in
            self.whenEnded { continuation.resume(returning: $0) }
        }
    }

    private static let heartbeatBytes = Array(": heartbeat\n\n".utf8)

    /// Writes the pending notice if the connection takes it now (holding the state's lock).
    private func flush(_ state: inout State) -> Bool {
        guard let pending = state.pending else { return false }
        let event = "id: \(pending.to)\nevent: change\ndata: {\"cursor\":\"\(pending.from)\"}\n\n"
        guard self.offer(Array(event.utf8), &state) else { return false }
        state.pending = nil
        return true
    }

    /// Writes what waits, once the connection can take it again.
    private func resume() {
        let sent = self.state.withLock { state -> Bool in
            guard state.end == nil else { return false }
            state.waitingSince = nil
            return self.flush(&state)
        }
        if sent { self.metrics?.events.increment() }
    }

    private func write(_ bytes: [UInt8]) {
        _ = self.state.withLock { state in self.offer(bytes, &state) }
    }

    /// Offers `bytes` to the connection (holding the state's lock); false when it cannot take
    /// them now (``resume()`` runs when it can) or is gone.
    private func offer(_ bytes: [UInt8], _ state: inout State) -> Bool {
        do {
            guard try self.sink.offer(bytes, whenWritable: { [weak self] in self?.resume() }) else {
                if state.waitingSince == nil { state.waitingSince = .now }
                return false
            }
            state.lastWrite = .now
            state.waitingSince = nil
            return true
        } catch {
            // The connection is gone: the sink's close handler ends the stream.
            return false
        }
    }
}
