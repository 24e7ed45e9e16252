import SpoutCore
import Synchronization

/// Whether the database of an endpoint set is ready for sync reads: its tables checked and its
/// change log in place (``EndpointSet/prepareSync(on:)``). Until then a sync read is `503`
/// with `Retry-After`: a service whose database was down at start serves everything else, and
/// sync reads once the database has been reached.
///
/// It also keeps what sync reads share: the probe of each database's change log
/// (``ChangeLogProbe``) and each statement's delta (``SyncDeltaStatement``).
///
/// A class behind a lock: one value shared by every copy of the endpoint set, the handlers
/// that read it and the start-up task that sets it.
public final class SyncState: Sendable {
    private let ready = Mutex(false)
    private let probes = Mutex<[ObjectIdentifier: ChangeLogProbe]>([:])
    /// Each statement's delta (by the key's labels and the statement's text): its key columns
    /// as the statement answers them, and the delta's statement, parsed.
    let deltas = BoundedCache<SyncDeltaName, SyncDeltaStatement>(capacity: 1024)

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

/// What a statement's delta is kept under: two endpoints may share one statement with keys
/// of their own.
struct SyncDeltaName: Hashable, Sendable {
    var key: [String]
    var statement: String
}

/// What a sync read from a cursor needs of its endpoint's statement, made once per statement
/// text (the statement with its optional clauses applied) and key, on a connection of its
/// database.
struct SyncDeltaStatement: Sendable {
    /// The key's columns as the statement answers them: their types cast the log's keys
    /// (PostgreSQL) and type the keys to forget.
    var keyColumns: [Column]
    /// The driver's delta over the statement (``SpoutCore/SyncDeltaSQL``), parsed: its search
    /// per changed key, and its read of the statement once where the driver has one.
    var changes: ParsedSQL
    var scanned: ParsedSQL?
    /// Whether a key touched more than once may come in more than one row (``SpoutCore/SyncDeltaSQL/keysRepeat``).
    var keysRepeat: Bool
}
