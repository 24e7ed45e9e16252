import Logging
import ServiceLifecycle
import SpoutCore

/// The database's place in `spout serve`'s service group: it does nothing while the servers
/// run and closes the database (its pools, replicas and threads) when the group shuts down,
/// after the servers that use it have drained (it is first in the group, so it stops last),
/// and waits for what still runs on its threads to end.
struct DatabaseService: Service {
    let database: Database
    let logger: Logger
    /// How long the process waits for database work begun before the close (a connection
    /// being opened) before it exits regardless.
    static let closeLimit: Duration = .seconds(5)

    func run() async throws {
        // Returns on graceful shutdown; throws when the group is cancelled instead.
        try? await gracefulShutdown()
        self.database.close()
        if await self.database.closed(within: Self.closeLimit) {
            self.logger.debug("database closed")
        } else {
            self.logger.warning("database work still running after \(Self.closeLimit); exiting anyway")
        }
    }
}
