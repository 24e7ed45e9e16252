import SpoutCore
import SpoutData
import SpoutDrivers
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Sync reads after many changes (issue #60): a client that comes back after a long time. On
/// PostgreSQL such a delta reads the statement once instead of searching it per key
/// (``SpoutCore/SyncDeltaChoice``); both forms must answer the same rows and tombstones.
@Suite("Sync reads after many changes")
struct SyncManyChangesTests {
    /// 1,500 pets of the owner `Herd`, `h10001` to `h11500`, with statistics that say so.
    static let herd = """
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1500)
        INSERT INTO pet (name, owner, species) SELECT 'h' || (10000 + i), 'Herd', 'sheep' FROM n;
        ANALYZE pet;
        """

    /// Every pet of the herd changed; a tenth of them deleted, a tenth given away; an event
    /// for another tenth: 300 keys to forget and 1,200 rows, 150 with a new event.
    static let upheaval = """
        UPDATE pet SET species = 'goat' WHERE owner = 'Herd';
        DELETE FROM pet WHERE owner = 'Herd' AND name LIKE '%0';
        UPDATE pet SET owner = 'Gwen' WHERE owner = 'Herd' AND name LIKE '%5';
        INSERT INTO event (name, "date", type, remark) SELECT name, '2024-05-06', 'vet', 'shorn' FROM pet WHERE owner = 'Herd' AND name LIKE '%3';
        """

    @Test("a delta of 1,500 changed keys against a result of 1,500: every tombstone and row, the copy equal to the result", arguments: PetsAPITests.backends)
    func comesBackAfterLong(_ backend: SQLDialect) async throws {
        try await SyncReadTests.withSyncedPets(backend) { service, _, ownerURL in
            let query = "owner=Herd&details=events"
            try await LiveNoticesTests.write(ownerURL, Self.herd)
            var copy = SyncReadTests.Copy()
            copy.apply(try await SyncReadTests.sync(service, query, since: "0"))
            #expect(copy.rows.count == 1_500)
            try await LiveNoticesTests.write(ownerURL, Self.upheaval)
            let delta = try await SyncReadTests.sync(service, query, since: copy.cursor)
            #expect(Set(delta.deleted).count == 300 && delta.deleted.count == 300, "\(delta.deleted.count) keys to forget")
            #expect(Set(delta.rows.map(\.name)).count == 1_200 && delta.rows.count == 1_200, "\(delta.rows.count) rows")
            #expect(delta.rows.filter { $0.json.contains("shorn") }.count == 150)
            copy.apply(delta)
            #expect(copy.rows == (try await SyncReadTests.current(service, query)))
        }
    }

    @Test(
        "many changes in a transaction that commits after a later one: the next delta has them, and the copy converges",
        .enabled(if: TestDatabases.postgresEnabled), .timeLimit(.minutes(2)))
    func heldOpenThenCommitted() async throws {
        try await SyncReadTests.withSyncedPets(.postgres) { service, _, ownerURL in
            let query = "owner=Herd&details=events"
            try await LiveNoticesTests.write(ownerURL, Self.herd)
            var copy = SyncReadTests.Copy()
            copy.apply(try await SyncReadTests.sync(service, query, since: "0"))
            // The first transaction adds an event to 750 pets and stays open. (Not the pets
            // themselves: every write of a pet also counts in pet_version, whose row would make
            // the later transaction wait for this one.)
            let held = try await onThread { () -> any DatabaseConnection in
                let connection = try Drivers.driver(for: ownerURL).connect(readOnly: false, statistics: QueryStatistics())
                try connection.begin(readOnly: false)
                try connection.executeScript(
                    """
                    INSERT INTO event (name, "date", type, remark)
                    SELECT name, '2024-06-07', 'vet', 'held' FROM pet WHERE owner = 'Herd' AND name <= 'h10750'
                    """)
                return connection
            }
            defer { held.close() }
            // A later one commits 1,050 changes meanwhile: 750 other pets, 300 new ones.
            try await LiveNoticesTests.write(
                ownerURL,
                """
                UPDATE pet SET species = 'later' WHERE owner = 'Herd' AND name > 'h10750';
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
                INSERT INTO pet (name, owner, species) SELECT 'h' || (20000 + i), 'Herd', 'lamb' FROM n;
                """)
            let later = try await SyncReadTests.sync(service, query, since: copy.cursor)
            #expect(later.rows.count >= 1_050 && !later.rows.contains { $0.json.contains("\"held\"") })
            copy.apply(later)
            try await onThread { try held.commit() }
            let afterCommit = try await SyncReadTests.sync(service, query, since: copy.cursor)
            #expect(afterCommit.rows.filter { $0.json.contains("\"held\"") }.count == 750, "\(afterCommit.rows.count) rows")
            copy.apply(afterCommit)
            #expect(copy.rows.count == 1_800)
            #expect(copy.rows == (try await SyncReadTests.current(service, query)))
        }
    }

    /// The statements whose deltas are compared, with the tables they follow: the pets of an
    /// owner with their events (a key of one text column) and the events (a key of a text and
    /// a date).
    static let statements: [(sql: String, key: [String], arguments: [String: SQLValue], tables: [String])] = [
        ("SELECT name, species, sex, birth FROM pet WHERE owner = :owner ORDER BY name", ["name"], ["owner": .text("Herd")], ["pet(name)", "event(name)"]),
        ("SELECT name, \"date\", type, remark FROM event ORDER BY name, \"date\"", ["name", "date"], [:], ["event(name,date)"]),
    ]

    @Test(
        "PostgreSQL: the delta that reads the statement once answers what the search per key answers, the keys to forget first",
        .enabled(if: TestDatabases.postgresEnabled), arguments: [0, 1])
    func formsAgree(_ statementIndex: Int) async throws {
        let store = try #require(try TestDatabases.make(.postgres, prefix: "spout_t_sync_forms"))
        defer { store.drop() }
        let url = store.url
        // Read on a thread of its own, checked here: an expectation recorded on that thread
        // would belong to no test.
        let answers = try await onThread { () -> [[String]] in
            let connection = try Drivers.driver(for: url).connect(readOnly: false, statistics: QueryStatistics())
            defer { connection.close() }
            try PetsLoader(sqlDirectory: Repository.sqlDirectory).load(into: connection)
            guard let log = connection as? any ChangeTracking else { throw DatabaseError(.unsupported, message: "no change log") }
            try log.installChangeTracking([
                TrackedTable(name: "pet", keyColumns: ["name"]), TrackedTable(name: "event", keyColumns: ["name"]),
                TrackedTable(name: "event", keyColumns: ["name", "date"]),
            ])
            try connection.executeScript(Self.herd)
            let since = try log.changeLogPosition().position
            try connection.executeScript(Self.upheaval)
            let (sql, key, statementArguments, tables) = Self.statements[statementIndex]
            let statements = try log.changeLogStatements
            let probe = try ParsedSQL(SyncQuery.keys(of: sql, key: key, limit: 0), dialect: .postgres)
            let keyColumns = try connection.queryAll([BoundStatement(probe, try probe.bind(statementArguments))])[0].columns
            let delta = statements.delta(sql, key, keyColumns)
            guard let scanned = delta.scanned else { throw DatabaseError(.unsupported, message: "no scanned form for \(key)") }
            var arguments = statementArguments
            arguments[SyncQuery.sinceParameter] = .integer(since)
            arguments[SyncQuery.tablesParameter] = statements.tablesArgument(tables)
            return try [delta.changes, scanned].map { text in
                let parsed = try ParsedSQL(text, dialect: .postgres)
                let rows = try connection.queryAll([BoundStatement(parsed, try parsed.bind(arguments))])[0].rows
                // The keys to forget (the statement's columns NULL) come before every row:
                // a row out of that order reads as "misplaced".
                let forgotten = rows.prefix { $0[0].isNull }.count
                return rows.enumerated().map { index, row in (index >= forgotten && row[0].isNull ? "misplaced " : "") + "\(row)" }.sorted()
            }
        }
        #expect(answers[0].count > 100 && !answers.joined().contains { $0.hasPrefix("misplaced") })
        #expect(answers[0].count == answers[1].count)
        #expect(answers[0] == answers[1], "\(answers[0].count) against \(answers[1].count) rows")
    }
}
