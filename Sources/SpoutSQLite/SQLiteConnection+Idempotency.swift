import SpoutCore

/// SQLite's table of writes' answers by idempotency key (``SpoutCore/IdempotencyStore``). One
/// write transaction runs at a time, so two requests with one key apply one after the other:
/// the second finds the first's answer.
///
/// The table has no index on `created_at`: each keyed write would rewrite one more page, which
/// makes WAL checkpoints come sooner. Rows are inserted in commit order, so row ids follow
/// `created_at`; the prune deletes the rows before the first one still within the retention,
/// reading only the expired ones to find it. A row written under a clock set back may outlive
/// its retention until the rows before it expire; a lookup treats it as absent all the same.
extension SQLiteConnection: IdempotencyStore {
    public var idempotencyStatements: IdempotencyStatements {
        get throws { try Self.idempotency.get() }
    }

    private static let idempotency = Result {
        IdempotencyStatements(
            tableExists: try ParsedSQL(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'spout_idempotency'", dialect: .sqlite),
            createScript: """
                CREATE TABLE IF NOT EXISTS spout_idempotency (
                    scope TEXT NOT NULL,
                    idempotency_key TEXT NOT NULL,
                    request_hash TEXT NOT NULL,
                    status INTEGER,
                    fields TEXT,
                    body BLOB,
                    created_at INTEGER NOT NULL DEFAULT (CAST(strftime('%s', 'now') AS INTEGER)),
                    PRIMARY KEY (scope, idempotency_key)
                );
                """,
            deleteExpired: try ParsedSQL(
                """
                DELETE FROM spout_idempotency WHERE scope = :scope AND idempotency_key = :key
                AND created_at < CAST(strftime('%s', 'now') AS INTEGER) - :seconds
                """, dialect: .sqlite),
            claim: try ParsedSQL(
                """
                INSERT INTO spout_idempotency (scope, idempotency_key, request_hash) VALUES (:scope, :key, :hash)
                ON CONFLICT (scope, idempotency_key) DO UPDATE
                SET request_hash = excluded.request_hash, status = NULL, fields = NULL, body = NULL,
                    created_at = CAST(strftime('%s', 'now') AS INTEGER)
                WHERE spout_idempotency.created_at < CAST(strftime('%s', 'now') AS INTEGER) - :seconds
                """, dialect: .sqlite),
            keep: try ParsedSQL(
                """
                INSERT INTO spout_idempotency (scope, idempotency_key, request_hash, status, fields, body)
                VALUES (:scope, :key, :hash, :status, :fields, :body)
                """, dialect: .sqlite),
            find: try ParsedSQL(
                "SELECT request_hash, status, fields, body FROM spout_idempotency WHERE scope = :scope AND idempotency_key = :key",
                dialect: .sqlite),
            answer: try ParsedSQL(
                """
                UPDATE spout_idempotency SET status = :status, fields = :fields, body = :body
                WHERE scope = :scope AND idempotency_key = :key
                """, dialect: .sqlite),
            prune: try ParsedSQL(
                """
                DELETE FROM spout_idempotency WHERE rowid < coalesce(
                    (SELECT rowid FROM spout_idempotency WHERE created_at >= CAST(strftime('%s', 'now') AS INTEGER) - :seconds
                     ORDER BY rowid LIMIT 1),
                    (SELECT max(rowid) + 1 FROM spout_idempotency))
                """, dialect: .sqlite))
    }
}
