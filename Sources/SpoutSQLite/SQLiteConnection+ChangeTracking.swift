import CSQLite3
import SpoutCore

/// SQLite's change log: a table `spout_changes` written by three triggers per tracked table.
///
/// Positions are the log's row ids (`AUTOINCREMENT`, never reused, also after pruning). SQLite
/// runs one write transaction at a time, so ids commit in their order, and a read transaction
/// sees one snapshot: a sync read's position is one past the largest id ever given out as
/// its snapshot sees it (`sqlite_sequence`).
///
/// Each change holds its key twice: as JSON array text (`row_key`, what the log's readers
/// decode) and its first value as the table holds it (`key_0`, no affinity), which a delta
/// joins on without decoding JSON per change.
extension SQLiteConnection: ChangeTracking {
    /// For a database file in WAL mode, its WAL-index header (``SQLiteCommitWatch``); nil for
    /// a memory database, or a file in another journal mode.
    public func commitWatch() -> (any CommitWatch)? {
        guard let name = sqlite3_db_filename(self.handle, "main"), name.pointee != 0 else { return nil }
        return SQLiteCommitWatch(path: String(cString: name))
    }

    /// Reads whether an existing log has `key_0` and which triggers of an earlier Spout are
    /// left, in the install's write transaction (no other process can change either
    /// meanwhile): a log made before the column gains it, filled from `row_key`, and every
    /// trigger named as those of that time (`spout_sync_…`, which do not write it) is dropped,
    /// whichever table it is on.
    public func changeTrackingScript(_ tables: [TrackedTable]) throws -> String {
        var script = """
            CREATE TABLE IF NOT EXISTS spout_changes (
                position INTEGER PRIMARY KEY AUTOINCREMENT,
                table_name TEXT NOT NULL,
                row_key TEXT NOT NULL,
                changed_at INTEGER NOT NULL DEFAULT (CAST(strftime('%s', 'now') AS INTEGER)),
                key_0
            );
            CREATE TABLE IF NOT EXISTS spout_change_horizon (
                single INTEGER PRIMARY KEY CHECK (single = 1),
                horizon INTEGER NOT NULL
            );
            INSERT OR IGNORE INTO spout_change_horizon (single, horizon) VALUES (1, 0);

            """
        if try self.changeLogLacksFirstKeyColumn() {
            script += """
                ALTER TABLE spout_changes ADD COLUMN key_0;
                UPDATE spout_changes SET key_0 = json_extract(row_key, '$[0]');

                """
        }
        for former in try self.formerTriggers() {
            script += "DROP TRIGGER IF EXISTS \(Self.quoteIdentifier(former));\n"
        }
        for table in tables {
            let name = Self.quoteIdentifier(table.name)
            let literal = "'" + table.logName.replacing("'", with: "''") + "'"
            func key(_ row: String) -> String {
                "json_array(" + table.keyColumns.map { "\(row).\(Self.quoteIdentifier($0))" }.joined(separator: ", ") + ")"
            }
            func first(_ row: String) -> String { "\(row).\(Self.quoteIdentifier(table.keyColumns[0]))" }
            func trigger(_ event: String) -> String { Self.quoteIdentifier(Self.triggerName(table, event)) }
            script += """
                DROP TRIGGER IF EXISTS \(trigger("insert"));
                DROP TRIGGER IF EXISTS \(trigger("update"));
                DROP TRIGGER IF EXISTS \(trigger("delete"));
                CREATE TRIGGER \(trigger("insert")) AFTER INSERT ON \(name) BEGIN
                    INSERT INTO spout_changes (table_name, row_key, key_0) VALUES (\(literal), \(key("NEW")), \(first("NEW")));
                END;
                CREATE TRIGGER \(trigger("update")) AFTER UPDATE ON \(name) BEGIN
                    INSERT INTO spout_changes (table_name, row_key, key_0) VALUES (\(literal), \(key("OLD")), \(first("OLD")));
                    INSERT INTO spout_changes (table_name, row_key, key_0)
                        SELECT \(literal), \(key("NEW")), \(first("NEW")) WHERE \(key("NEW")) IS NOT \(key("OLD"));
                END;
                CREATE TRIGGER \(trigger("delete")) AFTER DELETE ON \(name) BEGIN
                    INSERT INTO spout_changes (table_name, row_key, key_0) VALUES (\(literal), \(key("OLD")), \(first("OLD")));
                END;

                """
        }
        return script
    }

    /// Whether `spout_changes` exists without `key_0` (made by a Spout before it).
    private func changeLogLacksFirstKeyColumn() throws -> Bool {
        let check = try Self.firstKeyColumnCheck.get()
        let row = try self.queryAll([BoundStatement(check, [])]).first?.rows.first
        guard case .integer(let columns)? = row?.first, case .integer(let found)? = row?.last else { return false }
        return columns > 0 && found == 0
    }

    /// The names of the triggers an earlier Spout made (`spout_sync_…`).
    private func formerTriggers() throws -> [String] {
        let statement = try Self.formerTriggerNames.get()
        return try self.queryAll([BoundStatement(statement, [])]).first?.rows.compactMap { row in
            if case .text(let name)? = row.first { return name }
            return nil
        } ?? []
    }

    /// Triggers named as an earlier Spout named its own; an install check finds none once the
    /// log is up to date.
    private static let formerTriggerPattern = "spout_sync_*"

    private static let formerTriggerNames = Result {
        try ParsedSQL("SELECT name FROM sqlite_schema WHERE type = 'trigger' AND name GLOB '\(SQLiteConnection.formerTriggerPattern)'", dialect: .sqlite)
    }

    private static let firstKeyColumnCheck = Result {
        try ParsedSQL(
            """
            SELECT (SELECT count(*) FROM pragma_table_info('spout_changes')),
                   (SELECT count(*) FROM pragma_table_info('spout_changes') WHERE name = 'key_0')
            """, dialect: .sqlite)
    }

    public func changeTrackingTriggers(_ tables: [TrackedTable]) -> [String] {
        tables.flatMap { table in ["insert", "update", "delete"].map { Self.triggerName(table, $0) } }
    }

    private static func triggerName(_ table: TrackedTable, _ event: String) -> String {
        "spout_track_\(table.name)_\(table.triggerSuffix)_\(event)"
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
                  AND NOT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'trigger' AND name GLOB '\(SQLiteConnection.formerTriggerPattern)')
                """, dialect: .sqlite),
            tablesArgument: { tables in .text("[" + tables.map { "\"" + $0 + "\"" }.joined(separator: ",") + "]") },
            delta: SQLiteConnection.delta)
    }

    /// A delta joins the log's keys (`key_0`, then `json_extract` for a key's further values,
    /// compared with the key columns' affinity) to the statement by a `LEFT JOIN`, which SQLite
    /// answers by searching the key's index once per change (the statement flattened into the
    /// join), or, for a statement it cannot flatten (an aggregate, a `LIMIT`), by reading the
    /// statement once. No `DISTINCT`: the sort that puts the keys to forget first also orders
    /// by key, and the reader skips a key's repeats (a `DISTINCT` of its own cost SQLite a
    /// quarter of the statement).
    static func delta(sql: String, key: [String], keyColumns: [Column]) -> SyncDeltaSQL {
        let values = key.indices.map { index in
            let value = index == 0 ? "key_0" : "json_extract(row_key, '$[\(index)]')"
            return "\(value) AS \(SyncQuery.changedKeyColumn(index))"
        }.joined(separator: ", ")
        return SyncDeltaSQL(
            changes: """
                SELECT spout_sync.*, spout_changed.* FROM (
                  SELECT \(values) FROM spout_changes
                   WHERE position >= :\(SyncQuery.sinceParameter)
                     AND table_name IN (SELECT value FROM json_each(:\(SyncQuery.tablesParameter)))
                ) AS spout_changed
                LEFT JOIN \(SyncQuery.wrapped(sql)) ON \(SyncQuery.keyMatch(key))
                \(SyncQuery.forgottenFirst(key, adjacentKeys: true))
                """,
            keysRepeat: true)
    }
}
