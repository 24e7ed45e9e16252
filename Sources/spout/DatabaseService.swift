import Logging
import ServiceLifecycle
import SpoutCore

/// The database's place in `spout serve`'s service group: it does nothing while the servers
/// run and closes the database (its pools, replicas and threads) when the group shuts down,
/// after the servers that use it have drained (it is first in the group, so it stops last).
struct DatabaseService: Service {
    let database: Database
    let logger: Logger

    func run() async throws {
        // Returns on graceful shutdown; throws when the group is cancelled instead.
        try? await gracefulShutdown()
        self.database.close()
        self.logger.debug("database closed")
    }
}
