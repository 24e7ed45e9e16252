import Synchronization

/// Whether the database of an endpoint set is ready for sync reads: its tables checked and its
/// change log in place (``EndpointSet/prepareSync(on:)``). Until then a sync read is `503`
/// with `Retry-After`: a service whose database was down at start serves everything else, and
/// sync reads once the database has been reached.
///
/// A class behind a lock: one value shared by every copy of the endpoint set, the handlers
/// that read it and the start-up task that sets it.
public final class SyncState: Sendable {
    private let ready = Mutex(false)

    public init() {}

    public var isReady: Bool { self.ready.withLock { $0 } }

    func markReady() {
        self.ready.withLock { $0 = true }
    }
}
