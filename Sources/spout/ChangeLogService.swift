import Logging
import ServiceLifecycle
import SpoutCore
import SpoutEndpoints

/// The change log of the syncable endpoints while `spout serve` runs: until the database has
/// been prepared for sync reads (``SpoutEndpoints/EndpointSet/prepareSync(on:)``; a database
/// down at start is tried again every `retry`), then pruned to `retention` every `interval`,
/// until the service group shuts down. A failed prune is logged and tried again at the next
/// turn (the log only grows meanwhile). Several instances may prune one database: each
/// deletes what is old by then.
struct ChangeLogService: Service {
    let endpoints: EndpointSet
    let database: Database
    let retention: Duration
    let interval: Duration
    let retry: Duration
    let logger: Logger

    func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let wait: Duration
            if !self.endpoints.syncState.isReady {
                do {
                    try await self.endpoints.prepareSync(on: self.database)
                    self.logger.notice("sync reads ready: the change log is in place")
                    continue
                } catch let error where error is ChangeTrackingNotSetUp || error is ConfigurationError {
                    // Rights and tables do not come by themselves: said once at start, then
                    // tried again at the pruning pace.
                    self.logger.debug("\(error)")
                    wait = self.interval
                } catch {
                    self.logger.warning(
                        "sync reads wait: the database cannot be prepared for them yet; trying again",
                        metadata: ["error": "\(error)", "retry.seconds": "\(self.retry.components.seconds)"])
                    wait = self.retry
                }
            } else {
                do {
                    let pruned = try await self.endpoints.pruneChanges(on: self.database, retention: self.retention)
                    if pruned > 0 { self.logger.info("change log pruned", metadata: ["sync.changes_pruned": "\(pruned)"]) }
                } catch {
                    self.logger.warning("cannot prune the change log; trying again later", metadata: ["error": "\(String(reflecting: error))"])
                }
                wait = self.interval
            }
            _ = try? await cancelWhenGracefulShutdown { try await Task.sleep(for: wait) }
        }
    }
}
