import Logging
import SpoutCore

/// The databases' events an operator needs in the log, one line each: a pool whose new
/// connections reach another server than before (a failover or switchover moved the primary,
/// or a replica URL now leads elsewhere). Given to every database the server opens, beside its
/// metrics (``SpoutCore/ObserverPair``).
public struct DatabaseEventLog: DatabaseObserver {
    let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    public func connectionAcquired(database: String, after wait: Duration) {}

    public func serverChanged(database: String, from previous: String, to server: String) {
        self.logger.warning(
            "database \(database) moved from \(previous) to \(server): new connections reach \(server); those to \(previous) are closed as they come back",
            metadata: ["database": "\(database)", "database.server": "\(server)", "database.previousServer": "\(previous)"])
    }
}
