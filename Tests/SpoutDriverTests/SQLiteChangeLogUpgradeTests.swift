import SpoutCore
import Testing

@testable import SpoutSQLite

/// SQLite's change log keeps each change's first key value in a column of its own (`key_0`),
/// which deltas join on. A database whose log an earlier Spout made (without the column, its
/// triggers named `spout_sync_…`) is brought up to date at the next start, its changes kept.
@Suite struct SQLiteChangeLogUpgradeTests {
    static let pet = TrackedTable(name: "pet", keyColumns: ["name"])

    static let schema = """
        CREATE TABLE pet (name TEXT PRIMARY KEY, owner TEXT NOT NULL, species TEXT NOT NULL);
        INSERT INTO pet VALUES ('Bowser', 'Diane', 'dog'), ('Chirpy', 'Gwen', 'bird'), ('Fang', 'Benny', 'dog');
        """

    /// The log and its triggers as a Spout before `key_0` made them, for `pet(name)`.
    static var formerLog: String {
        """
        CREATE TABLE spout_changes (
            position INTEGER PRIMARY KEY AUTOINCREMENT,
            table_name TEXT NOT NULL,
            row_key TEXT NOT NULL,
            changed_at INTEGER NOT NULL DEFAULT (CAST(strftime('%s', 'now') AS INTEGER))
        );
        CREATE TABLE spout_change_horizon (single INTEGER PRIMARY KEY CHECK (single = 1), horizon INTEGER NOT NULL);
        INSERT INTO spout_change_horizon VALUES (1, 0);

        """ + ["INSERT": "NEW", "UPDATE": "OLD", "DELETE": "OLD"].map { event, row in
            Self.formerTrigger(on: Self.pet, event, row)
        }.joined()
    }

    /// A trigger on `table` as a Spout before `key_0` made it: the key of `row` as JSON alone.
    static func formerTrigger(on table: TrackedTable, _ event: String, _ row: String) -> String {
        """
        CREATE TRIGGER "spout_sync_\(table.name)_\(table.triggerSuffix)_\(event.lowercased())" AFTER \(event) ON \(table.name) BEGIN
            INSERT INTO spout_changes (table_name, row_key) VALUES ('\(table.logName)', json_array(\(row).name));
        END;

        """
    }

    @Test func aFreshLogHoldsTheFirstKeyValue() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            try connection.executeScript(Self.schema)
            #expect(try connection.installChangeTracking([Self.pet]))
            #expect(try !connection.installChangeTracking([Self.pet]))
            try connection.executeScript("UPDATE pet SET species = 'cat' WHERE name = 'Fang'")
            #expect(try connection.sqliteRows("SELECT row_key, key_0 FROM spout_changes") == [[.text("[\"Fang\"]"), .text("Fang")]])
        }
    }

    @Test func aFormerLogGainsTheColumnAndKeepsItsChanges() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            try connection.executeScript(Self.schema + Self.formerLog)
            try connection.executeScript(
                """
                UPDATE pet SET species = 'cat' WHERE name = 'Fang';
                DELETE FROM pet WHERE name = 'Bowser';
                INSERT INTO pet VALUES ('Puffball', 'Diane', 'hamster');
                """)

            #expect(try connection.installChangeTracking([Self.pet]))
            #expect(try connection.sqliteScalar("SELECT count(*) FROM spout_changes WHERE key_0 IS NOT json_extract(row_key, '$[0]')") == .integer(0))
            #expect(try connection.sqliteScalar("SELECT count(*) FROM spout_changes") == .integer(3))
            #expect(try connection.sqliteScalar("SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'spout_sync_%'") == .integer(0))
            #expect(try !connection.installChangeTracking([Self.pet]))

            // One write, one change: the former triggers no longer write beside the new ones.
            try connection.executeScript("INSERT INTO pet VALUES ('Slim', 'Benny', 'snake')")
            #expect(try connection.sqliteRows("SELECT row_key, key_0 FROM spout_changes WHERE position > 3") == [[.text("[\"Slim\"]"), .text("Slim")]])

            // An earlier Spout started on the database again makes its triggers once more, on
            // a table this one no longer tracks too: the next start drops them all.
            try connection.executeScript(
                "CREATE TABLE toy (name TEXT PRIMARY KEY);\n"
                    + Self.formerTrigger(on: TrackedTable(name: "toy", keyColumns: ["name"]), "INSERT", "NEW")
                    + Self.formerTrigger(on: Self.pet, "INSERT", "NEW"))
            #expect(try connection.installChangeTracking([Self.pet]))
            #expect(try connection.sqliteScalar("SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'spout_sync_%'") == .integer(0))
            #expect(try !connection.installChangeTracking([Self.pet]))

            // A delta from before the upgrade finds the changes the former triggers wrote, and
            // the new one (another owner's pet: a key to forget for Diane).
            let rows = try self.delta(on: connection, "SELECT name, species FROM pet WHERE owner = :owner", owner: "Diane", since: 1)
            #expect(rows == [
                [.null, .null, .text("Bowser")],
                [.null, .null, .text("Fang")],
                [.null, .null, .text("Slim")],
                [.text("Puffball"), .text("hamster"), .text("Puffball")],
            ])
        }
    }

    /// The rows of `sql`'s delta for the key `name` since `position`, as the driver makes it.
    private func delta(on connection: SQLiteConnection, _ sql: String, owner: String, since position: Int64) throws -> [[SQLValue]] {
        let statements = try connection.changeLogStatements
        let delta = try ParsedSQL(statements.delta(sql, ["name"], []).changes, dialect: .sqlite)
        let arguments: [String: SQLValue] = [
            "owner": .text(owner), SyncQuery.sinceParameter: .integer(position),
            SyncQuery.tablesParameter: statements.tablesArgument([Self.pet.logName]),
        ]
        return try connection.queryAll([BoundStatement(delta, try delta.bind(arguments))]).first?.rows ?? []
    }
}
