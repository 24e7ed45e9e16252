import SpoutCore

/// SQLite's change log: a table `spout_changes` written by three triggers per tracked table.
///
/// Positions are the log's row ids (`AUTOINCREMENT`, never reused, also after pruning). SQLite
/// runs one write transaction at a time, so ids commit in their order, and a read transaction
/// sees one snapshot: a sync read's position is one past the largest id ever given out as
/// its snapshot sees it (`sqlite_sequence`).
extension SQLiteConnection: ChangeTracking {
    public func changeTrackingScript(_ tables: [TrackedTable]) throws -> String {
        var script = """
            CREATE TABLE IF NOT EXISTS spout_changes (
                position INTEGER PRIMARY KEY AUTOINCREMENT,
                table_name TEXT NOT NULL,
                row_key TEXT NOT NULL,
                changed_at INTEGER NOT NULL DEFAULT (CAST(strftime('%s', 'now') AS INTEGER))
            );
            CREATE TABLE IF NOT EXISTS spout_change_horizon (
                single INTEGER PRIMARY KEY CHECK (single = 1),
                horizon INTEGER NOT NULL
            );
            INSERT OR IGNORE INTO spout_change_horizon (single, horizon) VALUES (1, 0);

            """
        for table in tables {
            let name = Self.quoteIdentifier(table.name)
            let literal = "'" + table.logName.replacing("'", with: "''") + "'"
            func key(_ row: String) -> String {
                "json_array(" + table.keyColumns.map { "\(row).\(Self.quoteIdentifier($0))" }.joined(separator: ", ") + ")"
            }
            func trigger(_ event: String) -> String { Self.quoteIdentifier(Self.triggerName(table, event)) }
            script += """
                DROP TRIGGER IF EXISTS \(trigger("insert"));
                DROP TRIGGER IF EXISTS \(trigger("update"));
                DROP TRIGGER IF EXISTS \(trigger("delete"));
                CREATE TRIGGER \(trigger("insert")) AFTER INSERT ON \(name) BEGIN
                    INSERT INTO spout_changes (table_name, row_key) VALUES (\(literal), \(key("NEW")));
                END;
                CREATE TRIGGER \(trigger("update")) AFTER UPDATE ON \(name) BEGIN
                    INSERT INTO spout_changes (table_name, row_key) VALUES (\(literal), \(key("OLD")));
                    INSERT INTO spout_changes (table_name, row_key) SELECT \(literal), \(key("NEW")) WHERE \(key("NEW")) IS NOT \(key("OLD"));
                END;
                CREATE TRIGGER \(trigger("delete")) AFTER DELETE ON \(name) BEGIN
                    INSERT INTO spout_changes (table_name, row_key) VALUES (\(literal), \(key("OLD")));
                END;

                """
        }
        return script
    }

    public func changeTrackingTriggers(_ tables: [TrackedTable]) -> [String] {
        tables.flatMap { table in ["insert", "update", "delete"].map { Self.triggerName(table, $0) } }
    }

    private static func triggerName(_ table: TrackedTable, _ event: String) -> String {
        "spout_sync_\(table.name)_\(table.triggerSuffix)_\(event)"
    }

    public var changeLogStatements: ChangeLogStatements {
        get throws { try Self.statements.get() }
    }

    private static let statements = Result {
        ChangeLogStatements(
            tableExists: try ParsedSQL(
                "SELECT count(*) FROM sqlite_schema WHERE type IN ('table', 'view') AND name = :table COLLATE NOCASE", dialect: .sqlite),
            tableColumns: try ParsedSQL("SELECT name FROM pragma_table_info(:table) ORDER BY cid", dialect: .sqlite),
            position: try ParsedSQL(
                """
                SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'spout_changes'), 0) + 1,
                       coalesce((SELECT horizon FROM spout_change_horizon), 0)
                """, dialect: .sqlite),
            // Positions are given out in commit order: the newest change is the last given out.
            probe: try ParsedSQL(
                """
                SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'spout_changes'), 0) + 1,
                       coalesce((SELECT horizon FROM spout_change_horizon), 0),
                       (SELECT max(position) FROM spout_changes)
                """, dialect: .sqlite),
            changedKeys: try ParsedSQL(
                """
                SELECT DISTINCT row_key FROM spout_changes
                WHERE position >= :position AND table_name IN (SELECT value FROM json_each(:tables))
                """, dialect: .sqlite),
            changes: try ParsedSQL(
                "SELECT position, table_name, row_key FROM spout_changes WHERE position >= :position", dialect: .sqlite),
            newestPrunable: try ParsedSQL(
                "SELECT max(position) FROM spout_changes WHERE changed_at < CAST(strftime('%s', 'now') AS INTEGER) - :seconds",
                dialect: .sqlite),
            prune: try ParsedSQL("DELETE FROM spout_changes WHERE position <= :horizon", dialect: .sqlite),
            advanceHorizon: try ParsedSQL("UPDATE spout_change_horizon SET horizon = max(horizon, :horizon)", dialect: .sqlite),
            installedTriggers: try ParsedSQL(
                """
                SELECT count(*) FROM sqlite_schema
                WHERE type = 'trigger' AND name IN (SELECT value FROM json_each(:names))
                  AND EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'spout_change_horizon')
                """, dialect: .sqlite),
            tablesArgument: { tables in .text("[" + tables.map { "\"" + $0 + "\"" }.joined(separator: ",") + "]") },
            delta: SQLiteConnection.delta)
    }

    /// A delta joins the log's keys (`json_extract`, compared with the key columns' affinity)
    /// to the statement by a `LEFT JOIN`, which SQLite answers by searching the key's index
    /// once per change (the statement flattened into the join), or, for a statement it cannot
    /// flatten (an aggregate, a `LIMIT`), by reading the statement once. No `DISTINCT`: the
    /// sort that puts the keys to forget first also orders by key, and the reader skips a
    /// key's repeats (a `DISTINCT` of its own cost SQLite a quarter of the statement).
    static func delta(sql: String, key: [String], keyColumns: [Column]) -> SyncDeltaSQL {
        let values = key.indices.map { "json_extract(row_key, '$[\($0)]') AS \(SyncQuery.changedKeyColumn($0))" }.joined(separator: ", ")
        return SyncDeltaSQL(
            changes: """
                SELECT spout_sync.*, spout_changed.* FROM (
                  SELECT \(values) FROM spout_changes
                   WHERE position >= :\(SyncQuery.sinceParameter)
                     AND table_name IN (SELECT value FROM json_each(:\(SyncQuery.tablesParameter)))
                ) AS spout_changed
                LEFT JOIN \(SyncQuery.wrapped(sql)) ON \(SyncQuery.keyMatch(key))
                \(SyncQuery.forgottenFirst(key, adjacentKeys: true))
                """)
    }
}
