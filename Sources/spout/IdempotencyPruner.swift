import Logging
import ServiceLifecycle
import SpoutCore
import SpoutEndpoints

/// Prunes the writes' answers kept by idempotency key to `database.idempotencyRetentionHours`
/// every `interval` while `spout serve` runs (``SpoutEndpoints/IdempotencyState/pruneExpired(on:)``);
/// a failure is logged and tried again at the next turn.
struct IdempotencyPruner: Service {
    let state: IdempotencyState
    let database: Database
    let interval: Duration
    let logger: Logger

    func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let interval = self.interval
            _ = try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            do {
                let pruned = try await self.state.pruneExpired(on: self.database)
                if pruned > 0 { self.logger.info("idempotency keys pruned", metadata: ["idempotency.pruned": "\(pruned)"]) }
            } catch {
                self.logger.warning("cannot prune idempotency keys; trying again later", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }
}
