import Prometheus
import SpoutCore
import SpoutHTTP
import Synchronization

/// The databases' metrics: pools, waits for a connection, cancelled and timed-out statements,
/// servers that stopped answering, switches to another server (a failover), and how long
/// streams lease connections. The observer of every database the server opens
/// (``SpoutCore/Database/observer``), so what ``SpoutCore/Database/withSession(_:observer:retryOnPrimary:_:)``
/// does is counted where it happens, not by the HTTP layer; its families live in the server's
/// registry (``SpoutHTTP/ServerMetrics/registry``) and are served with the rest.
///
/// Contract: every family has HELP text and a name `promtool check metrics` accepts
/// (``Family``); series are labelled by database name (`primary`, `replica 1`), a bounded set.
public final class DatabaseMetrics: DatabaseObserver {
    private let registry: PrometheusCollectorRegistry
    private let acquireWaits: LabeledDurationHistograms
    private let cancels: Counter
    private let acquireTimeouts: Counter
    private let statementTimeouts: Counter
    private let streamConnectionSeconds: Counter
    /// Each database's shared reads counted so far (``SpoutCore/QueryStatistics/sharedReadCount``
    /// at the last scrape), so the counter grows by what was read since.
    private let sharedReadsCounted = Mutex<[String: Int]>([:])

    public init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        self.acquireWaits = LabeledDurationHistograms(registry: registry, family: Family.acquireWait, label: "database")
        self.cancels = registry.makeCounter(descriptor: Family.statementCancels.descriptor)
        self.acquireTimeouts = registry.makeCounter(descriptor: Family.acquireTimeouts.descriptor)
        self.statementTimeouts = registry.makeCounter(descriptor: Family.statementTimeouts.descriptor)
        self.streamConnectionSeconds = registry.makeCounter(descriptor: Family.streamConnectionSeconds.descriptor)
    }

    // MARK: DatabaseObserver

    public func connectionAcquired(database: String, after wait: Duration) {
        self.acquireWaits.record(wait, for: database)
    }

    public func acquireTimedOut(database: String) {
        self.acquireTimeouts.increment()
    }

    public func connectionReleased(database: String, after held: Duration, work: DatabaseWork) {
        guard work.isStream else { return }
        self.streamConnectionSeconds.increment(by: Double(held.wholeNanoseconds) / 1e9)
    }

    public func statementCancelled() {
        self.cancels.increment()
    }

    public func statementTimedOut() {
        self.statementTimeouts.increment()
    }

    public func serverNotAnswering(database: String) {
        self.registry.makeCounter(descriptor: Family.notAnswering.descriptor, labels: [("database", database)]).increment()
    }

    public func serverChanged(database: String, from previous: String, to server: String) {
        self.registry.makeCounter(descriptor: Family.serverChanges.descriptor, labels: [("database", database)]).increment()
    }

    // MARK: Pools

    /// Sets the pool gauges of `databases` and their replicas to what they hold now: called
    /// when the metrics are scraped, not on the request path.
    public func recordPools(of databases: [Database]) {
        for database in databases {
            self.recordPool(of: database, as: database.name)
            for replica in database.replicas?.replicas ?? [] {
                self.recordPool(of: replica.database, as: replica.name)
            }
        }
    }

    private func recordPool(of database: Database, as name: String) {
        let pool = database.poolState
        let labels = [("database", name)]
        self.registry.makeGauge(descriptor: Family.poolOpen.descriptor, labels: labels).set(to: Double(pool.open))
        self.registry.makeGauge(descriptor: Family.poolInUse.descriptor, labels: labels).set(to: Double(pool.inUse))
        self.registry.makeGauge(descriptor: Family.poolIdle.descriptor, labels: labels).set(to: Double(pool.idle))
        self.registry.makeGauge(descriptor: Family.poolWaiters.descriptor, labels: labels).set(to: Double(pool.waiters))
        // Each pool's series exists from the first scrape (at 0), so a rate or an alert on it
        // has a series before the first server stops answering.
        _ = self.registry.makeCounter(descriptor: Family.notAnswering.descriptor, labels: labels)
        _ = self.registry.makeCounter(descriptor: Family.serverChanges.descriptor, labels: labels)
        guard let shared = database.sharedReaders else { return }
        self.registry.makeGauge(descriptor: Family.sharedOpen.descriptor, labels: labels).set(to: Double(shared.openCount))
        let reads = database.statistics.sharedReadCount
        let new = self.sharedReadsCounted.withLock { counted in
            defer { counted[name] = max(counted[name] ?? 0, reads) }
            return max(0, reads - (counted[name] ?? 0))
        }
        self.registry.makeCounter(descriptor: Family.sharedReads.descriptor, labels: labels).increment(by: Int64(new))
    }
}

extension DatabaseMetrics {
    /// Every family of the databases' metrics: its name and its HELP text.
    enum Family: String, CaseIterable, MetricFamily {
        case statementCancels = "spout_statement_cancels_total"
        case statementTimeouts = "spout_statement_timeouts_total"
        case notAnswering = "spout_database_not_answering_total"
        case serverChanges = "spout_database_server_changes_total"
        case acquireTimeouts = "spout_pool_acquire_timeouts_total"
        case acquireWait = "spout_pool_acquire_wait_seconds"
        case streamConnectionSeconds = "spout_stream_connection_seconds_total"
        case poolOpen = "spout_pool_connections_open"
        case poolInUse = "spout_pool_connections_in_use"
        case poolIdle = "spout_pool_connections_idle"
        case poolWaiters = "spout_pool_waiters"
        case sharedOpen = "spout_shared_connections_open"
        case sharedReads = "spout_shared_reads_total"

        /// The `# HELP` text: one line, what is measured and in what unit.
        var help: String {
            switch self {
            case .statementCancels: "Statements cancelled because their client left."
            case .statementTimeouts: "Statements stopped by the statement timeout."
            case .notAnswering: "Waits for a database server's answer given up past the statement timeout and its grace period, by pool."
            case .serverChanges: "New connections that reached another server than the pool's before (a failover or switchover), by pool."
            case .acquireTimeouts: "Requests answered 503 because no database connection was free within the acquire timeout."
            case .acquireWait: "Time database work waited for a connection, in seconds, by pool."
            case .streamConnectionSeconds: "Seconds database connections were leased by streamed responses."
            case .poolOpen: "Database connections open, by pool."
            case .poolInUse: "Database connections leased to a request, by pool."
            case .poolIdle: "Database connections open and idle, by pool."
            case .poolWaiters: "Requests waiting for a database connection, by pool."
            case .sharedOpen: "Shared connections open, carrying many requests' single-row reads at once, by database."
            case .sharedReads: "Reads answered on a shared connection instead of a leased one, by database."
            }
        }
    }
}
