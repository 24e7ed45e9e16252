import SpoutCore

/// PostgreSQL's change log: a table `spout_changes` written by a trigger function per tracked
/// table, fired after each of its row changes, with the writing transaction's id. Each
/// function names its table's key columns and the log's schema in static SQL, which
/// PL/pgSQL plans once per session: a shared function that took them as arguments needed a
/// dynamic `EXECUTE`, planned for every row, and the whole row as `jsonb` (about three times
/// the cost per row).
///
/// Positions are transaction ids (`pg_current_xact_id()`). A sync read's position is the
/// `xmin` of its statement's snapshot: every transaction below it has ended, so a change not
/// at or after it committed before the read began; one of a transaction still open has an id
/// at or after it, and the next read, from that position, finds it. Transactions that commit
/// out of the order of their ids therefore cost a row sent twice, never a change missed.
///
/// The trigger function runs as the role that installed it (`SECURITY DEFINER`), so the roles
/// requests switch to need no rights on the change log. Needs PostgreSQL 14 (`CREATE OR
/// REPLACE TRIGGER`).
extension PostgresConnection: ChangeTracking {
    /// An advisory lock key that serializes installations by several instances at once
    /// (`CREATE OR REPLACE FUNCTION` run concurrently fails with "tuple concurrently updated").
    static let installLock = 0x5370_6F75_7453_796E

    public func changeTrackingScript(_ tables: [TrackedTable]) throws -> String {
        var script = """
            SELECT pg_advisory_xact_lock(\(Self.installLock));
            CREATE TABLE IF NOT EXISTS spout_changes (
                position bigserial PRIMARY KEY,
                xid bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),
                table_name text NOT NULL,
                row_key jsonb NOT NULL,
                changed_at timestamptz NOT NULL DEFAULT clock_timestamp()
            );
            CREATE INDEX IF NOT EXISTS spout_changes_xid ON spout_changes (xid);
            CREATE TABLE IF NOT EXISTS spout_change_horizon (
                single boolean PRIMARY KEY DEFAULT true CHECK (single),
                horizon bigint NOT NULL
            );
            INSERT INTO spout_change_horizon (horizon) VALUES (0) ON CONFLICT DO NOTHING;

            """
        let log = Self.identifier(try self.currentSchema()) + ".spout_changes"
        for table in tables {
            // The key's columns as the catalog spells them (an unquoted name in the endpoint
            // is folded); an unquoted table name (`to_regclass`) is folded to lower case.
            let stored = try self.columns(ofTable: table.name) ?? []
            let keyColumns = table.keyColumns.map { TrackedTable.spelling(of: $0, among: stored) ?? $0 }
            func key(of row: String) -> String {
                "jsonb_build_array(" + keyColumns.map { "\(row).\(Self.identifier($0))" }.joined(separator: ", ") + ")"
            }
            let name = Self.literal(table.logName)
            let function = Self.identifier("spout_log_" + table.triggerSuffix)
            script += """
                CREATE OR REPLACE FUNCTION \(function)() RETURNS trigger
                LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $spout$
                DECLARE
                    old_key jsonb;
                    new_key jsonb;
                BEGIN
                    IF TG_OP <> 'INSERT' THEN
                        old_key := \(key(of: "OLD"));
                        INSERT INTO \(log) (table_name, row_key) VALUES (\(name), old_key);
                    END IF;
                    IF TG_OP <> 'DELETE' THEN
                        new_key := \(key(of: "NEW"));
                        IF new_key IS DISTINCT FROM old_key THEN
                            INSERT INTO \(log) (table_name, row_key) VALUES (\(name), new_key);
                        END IF;
                    END IF;
                    RETURN NULL;
                END
                $spout$;
                CREATE OR REPLACE TRIGGER \(Self.identifier("spout_sync_" + table.triggerSuffix))
                AFTER INSERT OR UPDATE OR DELETE ON \(Self.identifier(table.name.lowercased()))
                FOR EACH ROW EXECUTE FUNCTION \(function)();

                """
        }
        return script
    }

    public func changeTrackingTriggers(_ tables: [TrackedTable]) -> [String] {
        tables.map { "spout_sync_" + $0.triggerSuffix }
    }

    public var changeLogStatements: ChangeLogStatements {
        get throws { try Self.statements.get() }
    }

    private static let statements = Result {
        ChangeLogStatements(
            tableExists: try ParsedSQL(PostgresConnection.tableExistsQuery, dialect: .postgres),
            tableColumns: try ParsedSQL(
                """
                SELECT attname::text FROM pg_attribute
                WHERE attrelid = to_regclass(CAST(:table AS text)) AND attnum > 0 AND NOT attisdropped ORDER BY attnum
                """, dialect: .postgres),
            position: try ParsedSQL(
                "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint, (SELECT horizon FROM spout_change_horizon)",
                dialect: .postgres),
            // One statement, one snapshot: a change below its xmin that it does not see was
            // rolled back. The newest change is the largest xid the snapshot sees (an index's end).
            probe: try ParsedSQL(
                """
                SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint, (SELECT horizon FROM spout_change_horizon),
                       (SELECT max(xid) FROM spout_changes)
                """, dialect: .postgres),
            changedKeys: try ParsedSQL(
                """
                SELECT DISTINCT row_key::text FROM spout_changes
                WHERE xid >= CAST(:position AS bigint) AND table_name = ANY(CAST(:tables AS text[]))
                """, dialect: .postgres),
            changes: try ParsedSQL(
                "SELECT xid, table_name, row_key::text FROM spout_changes WHERE xid >= CAST(:position AS bigint)",
                dialect: .postgres),
            // Never past a transaction still running: a cursor read now starts at the oldest
            // one's id, and must stay above the horizon.
            newestPrunable: try ParsedSQL(
                """
                SELECT CASE WHEN max(xid) IS NULL THEN NULL
                            ELSE least(max(xid), pg_snapshot_xmin(pg_current_snapshot())::text::bigint - 1) END
                FROM spout_changes
                WHERE changed_at < clock_timestamp() - CAST(:seconds AS integer) * interval '1 second'
                """, dialect: .postgres),
            prune: try ParsedSQL("DELETE FROM spout_changes WHERE xid <= CAST(:horizon AS bigint)", dialect: .postgres),
            advanceHorizon: try ParsedSQL(
                "UPDATE spout_change_horizon SET horizon = greatest(horizon, CAST(:horizon AS bigint))", dialect: .postgres),
            installedTriggers: try ParsedSQL(
                """
                SELECT count(*) FROM pg_trigger
                WHERE NOT tgisinternal AND tgname = ANY(CAST(:names AS text[])) AND to_regclass('spout_change_horizon') IS NOT NULL
                """, dialect: .postgres),
            tablesArgument: { .array($0.map(SQLValue.text)) },
            delta: PostgresConnection.delta,
            changeCount: try ParsedSQL(
                """
                SELECT count(*) FROM (
                  SELECT 1 FROM spout_changes
                   WHERE xid >= CAST(:position AS bigint) AND table_name = ANY(CAST(:tables AS text[]))
                   LIMIT CAST(:limit AS bigint)
                ) AS spout_counted
                """, dialect: .postgres))
    }

    /// PostgreSQL's estimate for the plan's top node (`rows=N` on the first line of its
    /// `EXPLAIN`), planned for the values as an unnamed statement would be.
    public func estimatedRows(of sql: ParsedSQL, _ parameters: [SQLValue]) throws -> Int? {
        let lines = try self.explain(sql, parameters, options: QueryOptions(planForValues: true))
        return lines.first.flatMap(Self.estimatedRows(inPlanLine:))
    }

    /// A delta joins the log's distinct keys, cast to the key columns' types so the key's index
    /// serves the match, to the statement through a `LATERAL` subquery kept apart (`OFFSET 0`):
    /// the statement, whose `ORDER BY` keeps PostgreSQL from merging it into the join, is then
    /// searched once per changed key with the key pushed down into it, whatever the planner
    /// guesses of the log's newest rows; its cost follows the changes, not the result. A `LEFT
    /// JOIN`, so one search answers both whether the key is still the caller's and its row.
    static func delta(sql: String, key: [String], keyColumns: [Column]) -> SyncDeltaSQL {
        let values = key.indices.map { index in
            let type = index < keyColumns.count ? ParentKeyCast.typeName(of: keyColumns[index]) : "text"
            return "CAST(row_key ->> \(index) AS \(type)) AS \(SyncQuery.changedKeyColumn(index))"
        }.joined(separator: ", ")
        return SyncDeltaSQL(
            changes: """
                SELECT spout_sync.*, spout_changed.* FROM (
                  SELECT DISTINCT \(values) FROM spout_changes
                   WHERE xid >= CAST(:\(SyncQuery.sinceParameter) AS bigint)
                     AND table_name = ANY(CAST(:\(SyncQuery.tablesParameter) AS text[]))
                ) AS spout_changed
                LEFT JOIN LATERAL (SELECT * FROM \(SyncQuery.wrapped(sql)) WHERE \(SyncQuery.keyMatch(key)) OFFSET 0) AS spout_sync ON true
                \(SyncQuery.forgottenFirst(key))
                """,
            scanned: Self.scannedDelta(sql: sql, key: key, keyColumns: keyColumns, values: values), keysRepeat: false)
    }

    /// Key types whose equality PostgreSQL can hash or merge: what a `FULL JOIN` needs.
    private static let joinableKeyTypes: Set<String> = [
        "int2", "int4", "int8", "numeric", "text", "varchar", "bpchar", "name", "uuid", "date", "timestamp", "timestamptz",
        "time", "bool",
    ]

    /// The delta read by reading the statement once (``SpoutCore/SyncDeltaSQL/scanned``): the
    /// log's distinct keys in a `FULL JOIN` with the statement, which PostgreSQL can only answer
    /// by hashing or merging both sides, never by a search per key, whatever it guesses of the
    /// log's newest rows (the changes of one transaction share one `xid`, so it guesses few).
    /// The statement's rows no key matches are dropped by a test that is not strict
    /// (`coalesce`), which keeps PostgreSQL from reducing the join to a `LEFT JOIN` it could
    /// answer by searches again. Nil for a key of another type (``joinableKeyTypes``).
    private static func scannedDelta(sql: String, key: [String], keyColumns: [Column], values: String) -> String? {
        guard keyColumns.count == key.count, keyColumns.allSatisfy({ Self.joinableKeyTypes.contains(ParentKeyCast.typeName(of: $0)) }) else {
            return nil
        }
        let changed = key.indices.map { "spout_changed.\(SyncQuery.changedKeyColumn($0))" }.joined(separator: ", ")
        return """
            SELECT spout_sync.*, \(changed) FROM (
              SELECT DISTINCT \(values), true AS spout_present FROM spout_changes
               WHERE xid >= CAST(:\(SyncQuery.sinceParameter) AS bigint)
                 AND table_name = ANY(CAST(:\(SyncQuery.tablesParameter) AS text[]))
            ) AS spout_changed
            FULL JOIN \(SyncQuery.wrapped(sql)) ON \(SyncQuery.keyMatch(key))
            WHERE coalesce(spout_changed.spout_present, false)
            \(SyncQuery.forgottenFirst(key))
            """
    }

    /// The schema new tables go to (`current_schema()`), where the change log lives.
    private func currentSchema() throws -> String {
        let sql = try ParsedSQL.cached("SELECT current_schema()::text", dialect: .postgres)
        guard case .text(let schema)? = try self.queryAll([BoundStatement(sql, [])]).first?.rows.first?.first else {
            throw DatabaseError(.other, message: "no current schema to keep the change log in (search_path is empty)")
        }
        return schema
    }

    /// `name` as an SQL identifier: in double quotes, embedded quotes doubled.
    private static func identifier(_ name: String) -> String {
        "\"" + name.replacing("\"", with: "\"\"") + "\""
    }

    /// `text` as an SQL string literal.
    private static func literal(_ text: String) -> String {
        "'" + text.replacing("'", with: "''") + "'"
    }
}
