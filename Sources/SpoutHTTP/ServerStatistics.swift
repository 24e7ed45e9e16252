import Synchronization

/// Counters of an ``HTTPServer``, for metrics and tests.
public final class ServerStatistics: Sendable {
    private let open = Atomic<Int>(0)
    private let accepted = Atomic<Int>(0)
    private let rejected = Atomic<Int>(0)
    private let requests = Atomic<Int>(0)
    private let maxBuffered = Atomic<Int>(0)
    private let pauses = Atomic<Int>(0)
    private let rejectedPerAddress = Atomic<Int>(0)
    private let headTimeouts = Atomic<Int>(0)
    private let bodyTimeouts = Atomic<Int>(0)

    public init() {}

    /// Connections open now.
    public var openConnections: Int { self.open.load(ordering: .relaxed) }
    /// Connections accepted since start (including rejected ones).
    public var acceptedConnections: Int { self.accepted.load(ordering: .relaxed) }
    /// Connections closed right after accept because of ``ServerConfiguration/maximumConnections``.
    public var rejectedConnections: Int { self.rejected.load(ordering: .relaxed) }
    /// Connections closed right after accept because their client address already had
    /// ``ServerConfiguration/maximumConnectionsPerAddress`` open (also counted in
    /// ``rejectedConnections``).
    public var rejectedConnectionsPerAddress: Int { self.rejectedPerAddress.load(ordering: .relaxed) }
    /// Connections closed because a request head did not arrive within the head timeout.
    public var requestHeadTimeouts: Int { self.headTimeouts.load(ordering: .relaxed) }
    /// Requests answered 408 because their body did not arrive within the body timeout.
    public var requestBodyTimeouts: Int { self.bodyTimeouts.load(ordering: .relaxed) }
    /// Responses completed or aborted.
    public var requestCount: Int { self.requests.load(ordering: .relaxed) }
    /// The most bytes any connection had buffered for writing (not yet accepted by the
    /// socket), sampled after every streamed chunk.
    public var maximumBufferedOutboundBytes: Int { self.maxBuffered.load(ordering: .relaxed) }
    /// How many times a stream's producer waited for a slow client.
    public var streamPauses: Int { self.pauses.load(ordering: .relaxed) }

    func connectionOpened() -> Int {
        self.accepted.add(1, ordering: .relaxed)
        return self.open.add(1, ordering: .relaxed).newValue
    }

    func connectionClosed() {
        self.open.subtract(1, ordering: .relaxed)
    }

    func connectionRejected() {
        self.rejected.add(1, ordering: .relaxed)
    }

    func connectionRejectedForAddress() {
        self.rejected.add(1, ordering: .relaxed)
        self.rejectedPerAddress.add(1, ordering: .relaxed)
    }

    func requestHeadTimedOut() {
        self.headTimeouts.add(1, ordering: .relaxed)
    }

    func requestBodyTimedOut() {
        self.bodyTimeouts.add(1, ordering: .relaxed)
    }

    func requestCompleted() {
        self.requests.add(1, ordering: .relaxed)
    }

    func recordBufferedOutbound(_ bytes: Int) {
        self.maxBuffered.max(bytes, ordering: .relaxed)
    }

    func recordPauses(_ count: Int) {
        if count > 0 { self.pauses.add(count, ordering: .relaxed) }
    }
}
