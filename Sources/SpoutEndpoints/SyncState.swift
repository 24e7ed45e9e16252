import SpoutCore
import Synchronization

/// Whether the database of an endpoint set is ready for sync reads: its tables checked and its
/// change log in place (``EndpointSet/prepareSync(on:)``). Until then a sync read is `503`
/// with `Retry-After`: a service whose database was down at start serves everything else, and
/// sync reads once the database has been reached.
///
/// It also keeps what sync reads share: the probe of each database's change log
/// (``ChangeLogProbe``) and the types of each statement's key columns.
///
/// A class behind a lock: one value shared by every copy of the endpoint set, the handlers
/// that read it and the start-up task that sets it.
public final class SyncState: Sendable {
    private let ready = Mutex(false)
    private let probes = Mutex<[ObjectIdentifier: ChangeLogProbe]>([:])
    /// The key columns of a statement (by its text), as it answers them.
    let keyColumns = BoundedCache<String, [Column]>(capacity: 1024)

    public init() {}

    /// The probe of `database`'s change log, made on first use.
    func probe(of database: Database) -> ChangeLogProbe {
        self.probes.withLock { probes in
            if let probe = probes[ObjectIdentifier(database)] { return probe }
            let probe = ChangeLogProbe(database: database)
            probes[ObjectIdentifier(database)] = probe
            return probe
        }
    }

    public var isReady: Bool { self.ready.withLock { $0 } }

    func markReady() {
        self.ready.withLock { $0 = true }
    }
}
