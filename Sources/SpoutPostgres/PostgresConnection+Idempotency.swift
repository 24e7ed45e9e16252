import SpoutCore

/// PostgreSQL's table of writes' answers by idempotency key (``SpoutCore/IdempotencyStore``).
/// The claim is `INSERT … ON CONFLICT DO UPDATE … WHERE` (the update replaces an expired
/// record only), which waits at the key's unique index for a transaction that inserted the
/// same key and has not ended. A role that requests switch to
/// (`identity.roles`) needs `SELECT, INSERT, UPDATE, DELETE` on it.
extension PostgresConnection: IdempotencyStore {
    /// An advisory lock key that serializes creating the table from several instances.
    static let idempotencyLock = 0x5370_6F75_7449_644B

    public var idempotencyStatements: IdempotencyStatements {
        get throws { try Self.idempotency.get() }
    }

    private static let idempotency = Result {
        IdempotencyStatements(
            tableExists: try ParsedSQL("SELECT to_regclass('spout_idempotency') IS NOT NULL", dialect: .postgres),
            createScript: """
                SELECT pg_advisory_xact_lock(\(PostgresConnection.idempotencyLock));
                CREATE TABLE IF NOT EXISTS spout_idempotency (
                    scope text NOT NULL,
                    idempotency_key text NOT NULL,
                    request_hash text NOT NULL,
                    status integer,
                    fields text,
                    body bytea,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (scope, idempotency_key)
                );
                CREATE INDEX IF NOT EXISTS spout_idempotency_created ON spout_idempotency (created_at);
                """,
            deleteExpired: try ParsedSQL(
                """
                DELETE FROM spout_idempotency WHERE scope = :scope AND idempotency_key = :key
                AND created_at < now() - CAST(:seconds AS integer) * interval '1 second'
                """, dialect: .postgres),
            claim: try ParsedSQL(
                """
                INSERT INTO spout_idempotency (scope, idempotency_key, request_hash) VALUES (:scope, :key, :hash)
                ON CONFLICT (scope, idempotency_key) DO UPDATE
                SET request_hash = excluded.request_hash, status = NULL, fields = NULL, body = NULL, created_at = now()
                WHERE spout_idempotency.created_at < now() - CAST(:seconds AS integer) * interval '1 second'
                """, dialect: .postgres),
            keep: try ParsedSQL(
                """
                INSERT INTO spout_idempotency (scope, idempotency_key, request_hash, status, fields, body)
                VALUES (:scope, :key, :hash, CAST(:status AS integer), :fields, :body)
                """, dialect: .postgres),
            find: try ParsedSQL(
                "SELECT request_hash, status, fields, body FROM spout_idempotency WHERE scope = :scope AND idempotency_key = :key",
                dialect: .postgres),
            answer: try ParsedSQL(
                """
                UPDATE spout_idempotency SET status = CAST(:status AS integer), fields = :fields, body = :body
                WHERE scope = :scope AND idempotency_key = :key
                """, dialect: .postgres),
            prune: try ParsedSQL(
                "DELETE FROM spout_idempotency WHERE created_at < now() - CAST(:seconds AS integer) * interval '1 second'",
                dialect: .postgres))
    }
}
