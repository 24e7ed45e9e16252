import HTTPTypes
import Logging
import SpoutCore
import SpoutHTTP
import Synchronization

/// Whether the database's table of writes' answers by idempotency key is in place, made on the
/// first request that sends a key (``SpoutCore/IdempotencyStore/prepareIdempotency()``), and
/// how long answers are kept.
///
/// A class behind a lock: one value shared by every copy of the endpoint set and its handlers.
/// Answers older than ``retention`` are replaced when their key comes again and pruned by
/// `spout serve` every ten minutes (``pruneExpired(on:)``).
public final class IdempotencyState: Sendable {
    private let ready = Mutex(false)
    /// How long an answer is replayed for its key (`database.idempotencyRetentionHours`).
    public let retention: Duration

    public init(retention: Duration = .seconds(24 * 3_600)) {
        self.retention = retention
    }

    public var retentionSeconds: Int { Int(self.retention.components.seconds) }

    public var isReady: Bool { self.ready.withLock { $0 } }

    /// Makes the table on `database` unless done; a role that may not is a 503 for the request
    /// (logged with the database's words).
    public func ensure(on database: Database, logger: Logger) async throws {
        guard !self.isReady else { return }
        do {
            _ = try await database.withSession(DatabaseWork(readOnly: false)) { session in
                try await session.run { connection in try (connection as? any IdempotencyStore)?.prepareIdempotency() }
            }
        } catch let error as DatabaseError where error.code != .poolExhausted && error.code != .connectionFailed {
            logger.error(
                "idempotency keys are not set up: the table spout_idempotency cannot be made (docs/endpoints.md, Idempotency keys)",
                metadata: ["error": "\(error.message)"])
            throw HTTPError(
                status: .serviceUnavailable, message: "idempotency keys are not set up on this database", headers: [.retryAfter: "60"])
        }
        self.ready.withLock { $0 = true }
    }

    /// Deletes the answers older than ``retention`` from `database`; returns how many. Does
    /// nothing before the table is known to exist.
    public func pruneExpired(on database: Database) async throws -> Int {
        guard self.isReady else { return 0 }
        let seconds = self.retentionSeconds
        return try await database.withSession(DatabaseWork(readOnly: false, transaction: .always(readOnly: false))) { session in
            try await session.run { connection in try (connection as? any IdempotencyStore)?.pruneIdempotencyKeys(olderThan: seconds) ?? 0 }
        }
    }
}
