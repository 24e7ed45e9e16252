import SpoutCore
import SpoutHTTP

/// The routes that report on databases, registered by whatever composes HTTP with them (the
/// HTTP layer knows no database).
extension Router {
    /// `GET /ready`: 200 `{"status":"ready"}` when every database in `databases` answers
    /// `SELECT 1` within ``readinessLimit`` (``SpoutCore/Database/answers(within:)``), else 503.
    /// The body names the server the primary's connections reach (`"primary":"host:port"`, the
    /// one a multi-host URL settled on; none for SQLite) and lists each read replica (with its
    /// server), whether it answers, and what is known of it; replicas
    /// do not decide readiness (reads fall back to the primary). Every database is asked at
    /// once, so the answer comes within the limit however many there are, and a server that
    /// hangs (frozen, cut off) costs the probe the limit, never its own wait. A route of the
    /// same path already in the router wins.
    ///
    /// With `keys`, the body also says what instances behind one load balancer would disagree
    /// on, where this one can tell: `"cursorKeys":"this process"` when page cursors are sealed
    /// with a key of this process only (the database could not keep one), and
    /// `"settingsDiffer":[…]` with the shared settings another instance on the database has
    /// otherwise (``InstanceKeys/differingSettings()``). Neither decides readiness.
    public mutating func addReadiness(of databases: [Database], keys: InstanceKeys? = nil) {
        guard case .notFound = self.match(.get, path: "/ready") else { return }
        self.add(
            .get, "/ready",
            summary: "Readiness: 200 when every database answers SELECT 1 within \(Self.readinessLimit.components.seconds) s, else 503; the body lists each read replica and whether it answers."
        ) { _ in
            // Each replica with the set that knows its status, after the primaries: all asked at once.
            let replicas = databases.compactMap(\.replicas).flatMap { set in set.replicas.map { (set, $0) } }
            let asked = databases + replicas.map(\.1.database)
            let answers = await withTaskGroup(of: (Int, Bool).self) { group in
                for (index, database) in asked.enumerated() {
                    group.addTask { (index, await database.answers(within: Self.readinessLimit)) }
                }
                var answers = [Bool](repeating: false, count: asked.count)
                for await (index, answered) in group { answers[index] = answered }
                return answers
            }
            guard !answers.prefix(databases.count).contains(false) else {
                throw HTTPError(status: .serviceUnavailable, message: "not ready")
            }
            let entries = zip(replicas, answers.dropFirst(databases.count)).map { pair, up in
                let (set, replica) = pair
                let status = set.status(of: replica)
                var entry = JSONObjectWriter()
                entry.add("name", replica.name)
                entry.add("status", up ? "up" : "down")
                entry.add("inUse", up && status.isAvailable)
                if let lag = status.lagMilliseconds { entry.add("lagMs", lag) }
                if let problem = status.problem { entry.add("problem", problem) }
                if let server = replica.database.server { entry.add("server", server) }
                return entry
            }
            var body = JSONObjectWriter()
            body.add("status", "ready")
            if let server = databases.first?.server { body.add("primary", server) }
            if !entries.isEmpty { body.add("replicas", objects: entries) }
            if let keys {
                if keys.source == .thisProcess { body.add("cursorKeys", keys.source.rawValue) }
                let differing = keys.differingSettings()
                if !differing.isEmpty { body.add("settingsDiffer", differing) }
            }
            return Response.bytes(body.finished, contentType: "application/json")
        }
    }

    /// How long `/ready` waits for each database's `SELECT 1`.
    static let readinessLimit: Duration = .seconds(2)

    /// `GET /metrics`: `metrics` in the Prometheus text format (version 0.0.4), with the pool
    /// gauges of `databases` read at that moment into `databaseMetrics` (which lives in
    /// `metrics`' registry). A route of the same path already in the router wins.
    public mutating func addMetrics(_ metrics: ServerMetrics, databaseMetrics: DatabaseMetrics, databases: [Database]) {
        guard case .notFound = self.match(.get, path: "/metrics") else { return }
        self.add(.get, "/metrics", summary: "Prometheus metrics: requests by route, streams, pools, process.") { _ in
            databaseMetrics.recordPools(of: databases)
            return Response.bytes(metrics.exposition(), contentType: "text/plain; version=0.0.4; charset=utf-8")
        }
    }
}

extension Database {
    /// Descriptors this database and its replicas may hold open: a socket per connection, and
    /// as many again for cancel requests and the reactor (``SpoutHTTP/HTTPServer``'s
    /// `reservedFileDescriptors`).
    public var reservedFileDescriptors: Int {
        let connections = self.configuration.maximumConnections
            + (self.replicas?.replicas.reduce(0) { $0 + $1.database.configuration.maximumConnections } ?? 0)
        return connections * 2
    }
}
