import Synchronization

/// What an ``HTTPServer`` counts besides its metrics (``ServerMetrics``): the open
/// connections its connection limit is checked against, and what tests read of its
/// backpressure.
public final class ServerStatistics: Sendable {
    private let open = Atomic<Int>(0)
    private let rejected = Atomic<Int>(0)
    private let maxBuffered = Atomic<Int>(0)
    private let pauses = Atomic<Int>(0)

    public init() {}

    /// Connections closed right after accept because of ``ServerConfiguration/maximumConnections``
    /// or ``ServerConfiguration/maximumConnectionsPerAddress``.
    public var rejectedConnections: Int { self.rejected.load(ordering: .relaxed) }
    /// The most bytes any connection had buffered for writing (not yet accepted by the
    /// socket), sampled after every streamed chunk.
    public var maximumBufferedOutboundBytes: Int { self.maxBuffered.load(ordering: .relaxed) }
    /// How many times a stream's producer waited for a slow client.
    public var streamPauses: Int { self.pauses.load(ordering: .relaxed) }

    /// Counts an accepted connection; returns how many are open now, this one included.
    func connectionOpened() -> Int {
        self.open.add(1, ordering: .relaxed).newValue
    }

    func connectionClosed() {
        self.open.subtract(1, ordering: .relaxed)
    }

    func connectionRejected() {
        self.rejected.add(1, ordering: .relaxed)
    }

    func recordBufferedOutbound(_ bytes: Int) {
        self.maxBuffered.max(bytes, ordering: .relaxed)
    }

    func recordPauses(_ count: Int) {
        if count > 0 { self.pauses.add(count, ordering: .relaxed) }
    }
}
