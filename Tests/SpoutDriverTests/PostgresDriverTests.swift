import Foundation
import SpoutCore
import SpoutPostgres
import SpoutTestDatabases
import SpoutTestSupport
import Testing

@testable import SpoutPostgres

/// Integration tests of the libpq driver against a real PostgreSQL (`SPOUT_TEST_POSTGRES_URL`).
@Suite(.serialized)
struct PostgresDriverTests {
    // MARK: URLs and connecting

    @Test("a plan's estimated rows: the top node's rows= of EXPLAIN's first line")
    func estimatedRowsOfAPlanLine() {
        #expect(PostgresConnection.estimatedRows(inPlanLine: "Bitmap Heap Scan on pet  (cost=127.35..7203.14 rows=9152 width=23)") == 9152)
        #expect(PostgresConnection.estimatedRows(inPlanLine: "Result  (cost=0.00..0.01 rows=1 width=4)") == 1)
        #expect(PostgresConnection.estimatedRows(inPlanLine: "Seq Scan on \"a rows=5\"  (cost=0.00..1.00 rows=70 width=4)") == 70)
        #expect(PostgresConnection.estimatedRows(inPlanLine: "Index Scan") == nil)
    }

    @Test func rejectsURLsOfOtherSchemes() throws {
        for url in ["mysql://localhost/db", "sqlite:///tmp/x.db", "localhost:5432", ""] {
            let error = #expect(throws: DatabaseError.self) { try PostgresDriver(url: url) }
            #expect(error?.code == .invalidURL, "\(url)")
        }
        let driver = try PostgresDriver(url: "postgres://u@localhost/db")
        #expect(driver.dialect == .postgres)
        #expect(driver.hasReadOnlyConnections == false)
        _ = try PostgresDriver(url: "postgresql://u@localhost/db")
    }

    @Test func connectionErrorsNeverContainThePassword() throws {
        let driver = try PostgresDriver(url: "postgresql://spout:S3cr%40tPw@127.0.0.1:1/postgres?connect_timeout=2")
        let error = #expect(throws: DatabaseError.self) {
            try driver.connect(readOnly: false, statistics: QueryStatistics())
        }
        #expect(error?.code == .connectionFailed)
        #expect(error?.message.isEmpty == false)
        let redacted = driver.redacted("password S3cr%40tPw or S3cr@tPw rejected")
        #expect(redacted == "password *** or *** rejected")
        let queryDriver = try PostgresDriver(url: "postgres://h/db?user=u&password=hunter2")
        #expect(queryDriver.redacted("bad hunter2") == "bad ***")
    }

    @Test func applicationNamesAreKeptAsTheServerWouldKeepThem() throws {
        let standard = try PostgresDriver(url: "postgres://u@localhost/db")
        #expect(standard.applicationName == PostgresDriver.defaultApplicationName)
        #expect(standard.applicationName.hasPrefix("spout@") && standard.applicationName.hasSuffix("/\(getpid())"))
        #expect(standard.applicationName.utf8.count <= 63)
        let named = try PostgresDriver(url: "postgres://u@localhost/db", applicationName: "café\tsp\u{1F600}ut " + String(repeating: "x", count: 80))
        #expect(named.applicationName == "caf??sp?ut " + String(repeating: "x", count: 52))
    }

    @Test("the server stores the application name the driver sends, as the driver reports it", .enabled(if: TestDatabases.postgresEnabled))
    func serverSeesTheApplicationName() throws {
        let url = try TestDatabases.requirePostgresURL()
        let driver = try PostgresDriver(url: url, applicationName: "spout test ünïcode " + String(repeating: "y", count: 70))
        let connection = try #require(try driver.connect(readOnly: false, statistics: QueryStatistics()) as? PostgresConnection)
        defer { connection.close() }
        let stored = try connection.scalar("SELECT application_name FROM pg_stat_activity WHERE pid = pg_backend_pid()")
        #expect(stored == .text(driver.applicationName))
    }

    // MARK: Values

    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func everyTypeRoundTripsFromSQL() throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        let sql = #"""
            SELECT 1::int2 AS i2, 2::int4 AS i4, '-9223372036854775808'::int8 AS i8, 4::oid AS o,
                   1.5::float4 AS f4, 0.1::float8 AS f8, 'NaN'::float8 AS nan, 'Infinity'::float8 AS inf,
                   '-Infinity'::float8 AS ninf, 3.141592653589793::float8 AS pi, 1e300::float8 AS big,
                   12.3400::numeric AS dec, 'NaN'::numeric AS decnan, true AS t, false AS f,
                   'héllo'::text AS txt, 'v'::varchar AS vc, 'c'::char(3) AS ch, 'nm'::name AS nm,
                   'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS id,
                   '9999-01-01'::date AS d1, '1969-12-31'::date AS d2, '0044-03-15 BC'::date AS d3,
                   'infinity'::date AS dinf,
                   '2024-02-29 12:34:56.789012'::timestamp AS ts, '2024-02-29 12:34:56+02'::timestamptz AS tstz,
                   '12:34:56.5'::time AS tm, '{"a":1}'::jsonb AS jb, '{"b": [1, 2]}'::json AS js,
                   '\xdeadbeef'::bytea AS by,
                   ARRAY[1,2,NULL] AS ai, ARRAY['a"b','c,d', NULL, 'NULL', ''] AS at,
                   ARRAY['2024-01-02'::date] AS ad, ARRAY['\x01ff'::bytea] AS ab, ARRAY[1.50::numeric] AS an,
                   ARRAY[true, false] AS abool, '{{1,2},{3,4}}'::int4[] AS nested, ARRAY[]::text[] AS empty,
                   ARRAY['{"x": "y"}'::jsonb] AS aj, ARRAY['2000-01-01 00:00:00+00'::timestamptz] AS ats
            """#
        let parsed = try ParsedSQL(sql, dialect: .postgres)
        let cursor = try connection.query(parsed, [], options: QueryOptions())
        defer { cursor.close() }
        let expected: [(String, ColumnType, SQLValue)] = [
            ("i2", .integer, .integer(1)),
            ("i4", .integer, .integer(2)),
            ("i8", .integer, .integer(Int64.min)),
            ("o", .integer, .integer(4)),
            ("f4", .double, .double(1.5)),
            ("f8", .double, .double(0.1)),
            ("nan", .double, .double(.nan)),
            ("inf", .double, .double(.infinity)),
            ("ninf", .double, .double(-.infinity)),
            ("pi", .double, .double(3.141592653589793)),
            ("big", .double, .double(1e300)),
            ("dec", .decimal, .decimal("12.3400")),
            ("decnan", .decimal, .decimal("NaN")),
            ("t", .bool, .bool(true)),
            ("f", .bool, .bool(false)),
            ("txt", .text, .text("héllo")),
            ("vc", .text, .text("v")),
            ("ch", .text, .text("c  ")),
            ("nm", .text, .text("nm")),
            ("id", .text, .text("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")),
            ("d1", .date, .date(days: 2_932_532)),
            ("d2", .date, .date(days: -1)),
            ("d3", .date, .date(days: CivilTime.days(year: -43, month: 3, day: 15))),
            ("dinf", .date, .null),
            (
                "ts", .timestamp,
                .timestamp(
                    microseconds: CivilTime.days(year: 2024, month: 2, day: 29) * CivilTime.microsecondsPerDay
                        + (12 * 3600 + 34 * 60 + 56) * 1_000_000 + 789_012)
            ),
            (
                "tstz", .timestamp,
                .timestamp(
                    microseconds: CivilTime.days(year: 2024, month: 2, day: 29) * CivilTime.microsecondsPerDay
                        + (10 * 3600 + 34 * 60 + 56) * 1_000_000)
            ),
            ("tm", .time, .time("12:34:56.5")),
            ("jb", .json, .json(#"{"a": 1}"#)),
            ("js", .json, .json(#"{"b": [1, 2]}"#)),
            ("by", .bytes, .bytes([0xde, 0xad, 0xbe, 0xef])),
            ("ai", .array(.integer), .array([.integer(1), .integer(2), .null])),
            ("at", .array(.text), .array([.text("a\"b"), .text("c,d"), .null, .text("NULL"), .text("")])),
            ("ad", .array(.date), .array([.date(days: CivilTime.days(year: 2024, month: 1, day: 2))])),
            ("ab", .array(.bytes), .array([.bytes([0x01, 0xff])])),
            ("an", .array(.decimal), .array([.decimal("1.50")])),
            ("abool", .array(.bool), .array([.bool(true), .bool(false)])),
            (
                "nested", .array(.integer),
                .array([.array([.integer(1), .integer(2)]), .array([.integer(3), .integer(4)])])
            ),
            ("empty", .array(.text), .array([])),
            ("aj", .array(.json), .array([.json(#"{"x": "y"}"#)])),
            ("ats", .array(.timestamp), .array([.timestamp(microseconds: 946_684_800_000_000)])),
        ]
        // Columns are known before the first row.
        #expect(cursor.columns.map(\.label) == expected.map(\.0))
        #expect(cursor.columns.map(\.type) == expected.map(\.1))
        #expect(try cursor.next())
        for (index, (label, _, value)) in expected.enumerated() {
            let actual = cursor.value(at: index)
            if case .double(let expectedDouble) = value, expectedDouble.isNaN {
                guard case .double(let actualDouble) = actual else {
                    Issue.record("\(label): \(actual)")
                    continue
                }
                #expect(actualDouble.isNaN, "\(label)")
            } else {
                #expect(actual == value, "\(label)")
            }
        }
        #expect(try cursor.next() == false)
        #expect(try cursor.next() == false)
    }

    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func enumsAndUnknownTypesReadAsText() throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        try connection.withScratchSchema { _ in
            try connection.executeScript("CREATE TYPE mood AS ENUM ('sad', 'happy')")
            let parsed = try ParsedSQL("SELECT 'happy'::mood AS m, 'P1DT2H'::interval AS i", dialect: .postgres)
            let cursor = try connection.query(parsed, [], options: QueryOptions())
            defer { cursor.close() }
            #expect(cursor.columns.map(\.type) == [.text, .text])
            #expect(try PostgresTestEnvironment.readRows(cursor) == [[.text("happy"), .text("P1DT2H")]])
        }
    }

    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func parametersOfEveryTypeBindAsText() throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        let values: [(String, String, SQLValue)] = [
            ("i", "int8", .integer(Int64.min)),
            ("d", "float8", .double(-2.5e-7)),
            ("nan", "float8", .double(.infinity)),
            ("ninf", "float8", .double(-.infinity)),
            ("dec", "numeric", .decimal("-12345678901234567890.000100")),
            ("b", "bool", .bool(false)),
            ("t", "text", .text("a'b\"c\\d é\t{x}")),
            ("date", "date", .date(days: 2_932_532)),
            ("ts", "timestamptz", .timestamp(microseconds: 1_709_210_096_789_012)),
            ("tsz", "timestamp", .timestamp(microseconds: -1_000_000)),
            ("time", "time", .time("23:59:59.25")),
            ("json", "jsonb", .json(#"{"k": [1, "two"]}"#)),
            ("bytes", "bytea", .bytes([0, 1, 0x5c, 0x22, 0xff])),
            ("texts", "text[]", .array([.text("a\"b"), .text("c,d\\e"), .null, .text("NULL"), .text(""), .text("{}")])),
            ("ints", "int8[]", .array([.integer(1), .null, .integer(-3)])),
            ("matrix", "int4[]", .array([.array([.integer(1), .integer(2)]), .array([.integer(3), .integer(4)])])),
            ("blobs", "bytea[]", .array([.bytes([0xde, 0xad]), .null])),
            ("nothing", "text", .null),
        ]
        let select = "SELECT " + values.map { ":\($0.0)::\($0.1)" }.joined(separator: ", ")
        let rows = try connection.rows(select, Dictionary(uniqueKeysWithValues: values.map { ($0.0, $0.2) }))
        #expect(rows == [values.map(\.2)])

        let nan = try connection.scalar("SELECT :x::float8", ["x": .double(.nan)])
        guard case .double(let value) = nan else {
            Issue.record("\(nan)")
            return
        }
        #expect(value.isNaN)

        let unnested = try connection.rows(
            "SELECT x FROM unnest(:ids::int8[]) AS x",
            ["ids": .array([.integer(7), .integer(-2), .null, .integer(Int64.max)])]
        )
        #expect(unnested == [[.integer(7)], [.integer(-2)], [.null], [.integer(Int64.max)]])

        let error = #expect(throws: DatabaseError.self) { try connection.rows("SELECT :t::text", ["t": .text("a\u{0}b")]) }
        #expect(error?.code == .invalidValue)
        #expect(try connection.scalar("SELECT 1") == .integer(1))
    }

    // MARK: Streaming

    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func singleRowModeStreamsWithoutGrowingMemory() throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        let parsed = try ParsedSQL("SELECT n, repeat('x', 100) AS pad FROM generate_series(1, 2000000) AS n", dialect: .postgres)
        let cursor = try connection.query(parsed, [], options: QueryOptions())
        defer { cursor.close() }
        #expect(cursor.columns == [Column(label: "n", type: .integer, databaseTypeName: "int4"), Column(label: "pad", type: .text, databaseTypeName: "text")])
        var count: Int64 = 0
        var sum: Int64 = 0
        var baseline: Int?
        var peak = 0
        while try cursor.next() {
            count += 1
            if case .integer(let n) = cursor.value(at: 0) { sum += n }
            if count == 50_000 { baseline = postgresTestResidentMemoryBytes() }
            if count % 100_000 == 0, let rss = postgresTestResidentMemoryBytes() { peak = max(peak, rss) }
        }
        #expect(count == 2_000_000)
        #expect(sum == 2_000_000 * 2_000_001 / 2)
        // Materialising the result would take well over 250 MB; streaming keeps it flat.
        if let baseline {
            #expect(peak - baseline < 100 * 1024 * 1024, "RSS grew from \(baseline) to \(peak)")
        }
        #expect(try connection.scalar("SELECT 2") == .integer(2))
    }

    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func interleavedCursorLetsOtherStatementsRunBetweenFetches() throws {
        let statistics = QueryStatistics()
        let connection = try PostgresTestEnvironment.connect(statistics: statistics)
        defer { connection.close() }
        let outer = try ParsedSQL("SELECT n FROM generate_series(1, :last) AS n", dialect: .postgres)

        let outside = #expect(throws: DatabaseError.self) {
            try connection.query(outer, [.integer(3)], options: QueryOptions(interleaved: true))
        }
        #expect(outside?.code == .unsupported)

        try connection.begin(readOnly: true)
        let before = statistics.statementCount
        let cursor = try connection.query(outer, [.integer(35)], options: QueryOptions(interleaved: true, batchSize: 10))
        #expect(statistics.statementCount == before + 1)
        #expect(cursor.columns == [Column(label: "n", type: .integer, databaseTypeName: "int4")])
        var seen: [SQLValue] = []
        var inner: [SQLValue] = []
        while try cursor.next() {
            let value = cursor.value(at: 0)
            seen.append(value)
            if case .integer(let n) = value, n % 10 == 5 {
                inner.append(try connection.scalar("SELECT :n::int8 * 2", ["n": value]))
                #expect(cursor.value(at: 0) == value)
            }
        }
        #expect(seen == (1...35).map { .integer($0) })
        #expect(inner == [10, 30, 50, 70].map { .integer($0) })
        // DECLARE once plus the four inner queries; the four FETCHes are not counted.
        #expect(statistics.statementCount == before + 5)
        #expect(try connection.scalar("SELECT count(*) FROM pg_cursors WHERE name LIKE 'spout_c%'") == .integer(0))
        try connection.commit()
        #expect(connection.isInTransaction == false)
    }

    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func countsStatementsButNotFetchesOrTransactionControl() throws {
        let statistics = QueryStatistics()
        let connection = try PostgresTestEnvironment.connect(statistics: statistics)
        defer { connection.close() }
        let start = statistics.statementCount
        try connection.begin(readOnly: false)
        try connection.setStatementTimeout(milliseconds: 5000)
        #expect(statistics.statementCount == start)
        _ = try connection.rows("SELECT 1")
        #expect(statistics.statementCount == start + 1)
        try connection.run("SELECT 1")
        #expect(statistics.statementCount == start + 2)
        let rows = try connection.rows(
            "SELECT n FROM generate_series(1, 5) AS n",
            options: QueryOptions(interleaved: true, batchSize: 2)
        )
        #expect(rows.count == 5)
        #expect(statistics.statementCount == start + 3)
        try connection.rollback()
        try connection.setStatementTimeout(milliseconds: nil)
        #expect(statistics.statementCount == start + 3)
    }

    // MARK: Errors

    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func mapsSQLStatesToErrorCodes() throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        try connection.withScratchSchema { _ in
            try connection.executeScript("CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL)")
            #expect(try connection.run("INSERT INTO items VALUES (:id, :name)", ["id": 1, "name": "a"]) == 1)

            let unique = #expect(throws: DatabaseError.self) {
                try connection.run("INSERT INTO items VALUES (:id, :name)", ["id": 1, "name": "b"])
            }
            #expect(unique?.code == .uniqueViolation)
            #expect(unique?.sqlState == "23505")
            #expect(unique?.message.contains("items_pkey") == true)
            #expect(unique.map { "\($0)" } == "database error: unique violation")

            let notNull = #expect(throws: DatabaseError.self) {
                try connection.run("INSERT INTO items VALUES (:id, NULL)", ["id": 2])
            }
            #expect(notNull?.code == .constraintViolation)

            let invalidSQL = #expect(throws: DatabaseError.self) { try connection.rows("SELECT * FROM no_such_table") }
            #expect(invalidSQL?.code == .invalidSQL)

            let invalidValue = #expect(throws: DatabaseError.self) { try connection.rows("SELECT 1 / 0") }
            #expect(invalidValue?.code == .invalidValue)

            let badParameter = #expect(throws: DatabaseError.self) { try connection.rows("SELECT :n::int4", ["n": "x"]) }
            #expect(badParameter?.code == .invalidValue)

            // A wrong parameter count is a protocol error (08P01) on a live connection.
            let parsed = try ParsedSQL("SELECT $1::int4 + $2::int4", dialect: .postgres)
            let wrongCount = #expect(throws: DatabaseError.self) {
                try connection.query(parsed, [.integer(1)], options: QueryOptions())
            }
            #expect(wrongCount?.code == .other)
            #expect(wrongCount?.sqlState == "08P01")
            #expect(connection.isBroken == false)

            try connection.begin(readOnly: true)
            let readOnly = #expect(throws: DatabaseError.self) {
                try connection.run("INSERT INTO items VALUES (:id, :name)", ["id": 3, "name": "c"])
            }
            #expect(readOnly?.code == .readOnly)
            let failedCommit = #expect(throws: DatabaseError.self) { try connection.commit() }
            #expect(failedCommit?.code == .other)
            #expect(connection.isInTransaction == false)
            #expect(connection.isBroken == false)
            #expect(try connection.scalar("SELECT count(*) FROM items") == .integer(1))
        }
    }

    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func statementTimeoutFailsTheStatementAndKeepsTheConnection() throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        try connection.setStatementTimeout(milliseconds: 100)
        let error = #expect(throws: DatabaseError.self) { try connection.rows("SELECT pg_sleep(5)") }
        #expect(error?.code == .statementTimeout)
        #expect(error?.sqlState == "57014")
        #expect(connection.isBroken == false)
        try connection.setStatementTimeout(milliseconds: nil)
        #expect(try connection.scalar("SELECT 1") == .integer(1))
        #expect(try connection.scalar("SHOW statement_timeout") == .text("0"))

        // A SET inside a transaction that rolls back is undone; the next SET must be sent again.
        try connection.begin(readOnly: false)
        try connection.setStatementTimeout(milliseconds: 200)
        try connection.rollback()
        #expect(try connection.scalar("SHOW statement_timeout") == .text("0"))
        try connection.setStatementTimeout(milliseconds: 200)
        #expect(try connection.scalar("SHOW statement_timeout") == .text("200ms"))
        // reset() leaves the timeout alone: the pool restores its own default (ConnectionPoolTests).
        #expect(connection.reset())
        #expect(try connection.scalar("SHOW statement_timeout") == .text("200ms"))
    }

    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func cancelFromAnotherThreadStopsTheStatement() throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        let watcher = try PostgresTestEnvironment.connect()
        defer { watcher.close() }
        let pid = try connection.scalar("SELECT pg_backend_pid()")
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { finished.signal() }
            // Cancel once the server shows the sleep running, so the cancel cannot come too early.
            for _ in 0..<3000 {
                let active = try? watcher.scalar(
                    """
                    SELECT count(*) FROM pg_stat_activity
                    WHERE pid = :pid::int4 AND state = 'active' AND query LIKE '%pg_sleep(30)%'
                    """,
                    ["pid": pid]
                )
                if active == .integer(1) {
                    connection.cancel()
                    return
                }
                usleep(10_000)
            }
        }
        let error = #expect(throws: DatabaseError.self) { try connection.rows("SELECT pg_sleep(30)") }
        finished.wait()
        #expect(error?.code == .cancelled)
        #expect(error?.sqlState == "57014")
        #expect(connection.reset())
        #expect(connection.isBroken == false)
        #expect(try connection.scalar("SELECT 3") == .integer(3))
    }

    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func terminatedBackendBreaksTheConnection() throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        let admin = try PostgresTestEnvironment.connect()
        defer { admin.close() }
        _ = try connection.scalar("SELECT 1")
        let pid = try connection.scalar("SELECT pg_backend_pid()")
        #expect(try admin.scalar("SELECT pg_terminate_backend(:pid::int4, 10000)", ["pid": pid]) == .bool(true))
        let error = #expect(throws: DatabaseError.self) { try connection.scalar("SELECT 1") }
        #expect(error?.code == .connectionLost)
        #expect(connection.isBroken)
        #expect(connection.reset() == false)
    }

    // MARK: Read-only sessions and pipelines

    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func readOnlySessionRejectsWritesOutsideWriteTransactions() throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        try connection.withScratchSchema { _ in
            try connection.executeScript("CREATE TABLE items (id int4 PRIMARY KEY)")
            try connection.setReadOnly(true)
            let refused = #expect(throws: DatabaseError.self) { try connection.run("INSERT INTO items VALUES (1)") }
            #expect(refused?.code == .readOnly)
            #expect(connection.isInTransaction == false)
            try connection.begin(readOnly: false)
            #expect(try connection.run("INSERT INTO items VALUES (1)") == 1)
            try connection.commit()
            // A setting made inside a transaction that rolls back is undone by the server:
            // the connection must not believe it is still in effect.
            try connection.setReadOnly(false)
            try connection.begin(readOnly: false)
            try connection.setReadOnly(true)
            try connection.rollback()
            try connection.setReadOnly(true)
            let again = #expect(throws: DatabaseError.self) { try connection.run("INSERT INTO items VALUES (2)") }
            #expect(again?.code == .readOnly)
            try connection.setReadOnly(false)
            #expect(try connection.run("INSERT INTO items VALUES (2)") == 1)
            #expect(try connection.scalar("SELECT count(*) FROM items") == .integer(2))
        }
    }

    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func queryAllPipelinesStatementsInOneRoundTrip() throws {
        let statistics = QueryStatistics()
        let connection = try PostgresTestEnvironment.connect(statistics: statistics)
        defer { connection.close() }
        let series = try ParsedSQL("SELECT g AS n, 'row ' || g AS label FROM generate_series(1, :count::int4) g", dialect: .postgres)
        let echo = try ParsedSQL("SELECT CAST(:value AS date) AS day", dialect: .postgres)
        let failing = try ParsedSQL("SELECT 1 / :zero::int4 AS n", dialect: .postgres)
        let statements = [
            BoundStatement(series, try series.bind(["count": .integer(3)])),
            BoundStatement(echo, try echo.bind(["value": .text("2000-01-02")])),
            BoundStatement(series, try series.bind(["count": .integer(0)])),
        ]
        let expected: [[[SQLValue]]] = [
            [[.integer(1), .text("row 1")], [.integer(2), .text("row 2")], [.integer(3), .text("row 3")]],
            [[.date(days: 10_958)]],
            [],
        ]

        // A streamed query first: libpq keeps its single-row mode for the next pipeline.
        let cursor = try connection.query(series, try series.bind(["count": .integer(2)]), options: QueryOptions())
        while try cursor.next() {}
        cursor.close()
        let before = statistics.statementCount
        let results = try connection.queryAll(statements)
        #expect(statistics.statementCount - before == 3)
        #expect(results.map(\.rows) == expected)
        #expect(results.map { $0.columns.map(\.label) } == [["n", "label"], ["day"], ["n", "label"]])
        #expect(results[1].columns[0].type == .date)
        #expect(connection.isInTransaction == false)

        // One statement alone, and a failure in the middle: the error is the database's,
        // the rest is skipped, and the connection stays usable outside any transaction.
        #expect(try connection.queryAll([statements[0]]).map(\.rows) == [expected[0]])
        let error = #expect(throws: DatabaseError.self) {
            try connection.queryAll([statements[0], BoundStatement(failing, try failing.bind(["zero": .integer(0)])), statements[1]])
        }
        #expect(error?.sqlState == "22012")
        #expect(connection.isBroken == false)
        #expect(connection.isInTransaction == false)
        #expect(try connection.queryAll(statements).map(\.rows) == expected)

        // Inside a transaction the pipeline's failure fails the transaction, as one statement would.
        try connection.begin(readOnly: true)
        _ = #expect(throws: DatabaseError.self) {
            try connection.queryAll([BoundStatement(failing, try failing.bind(["zero": .integer(0)])), statements[1]])
        }
        #expect(connection.reset())
        #expect(try connection.scalar("SELECT 7") == .integer(7))
    }

    @Test("a result is described by its own columns, also when an earlier result on the connection had as many", .enabled(if: TestDatabases.postgresEnabled))
    func resultsLikeEarlierOnesKeepTheirOwnColumns() throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        // Same count as the first, differing in a type, in a name, in a name's length; then
        // more distinct results than the connection keeps descriptions of, then the first again.
        var cases: [(sql: String, columns: [Column])] = [
            ("SELECT 1 AS a, 'x'::text AS b", [Column(label: "a", type: .integer, databaseTypeName: "int4"), Column(label: "b", type: .text, databaseTypeName: "text")]),
            ("SELECT 1::int8 AS a, 'x'::text AS b", [Column(label: "a", type: .integer, databaseTypeName: "int8"), Column(label: "b", type: .text, databaseTypeName: "text")]),
            ("SELECT 1 AS a, 'x'::text AS c", [Column(label: "a", type: .integer, databaseTypeName: "int4"), Column(label: "c", type: .text, databaseTypeName: "text")]),
            ("SELECT 1 AS a, 'x'::text AS bb", [Column(label: "a", type: .integer, databaseTypeName: "int4"), Column(label: "bb", type: .text, databaseTypeName: "text")]),
        ]
        for index in 0..<(PostgresDescriptionMemo.capacity + 4) {
            cases.append(("SELECT true AS flag\(index)", [Column(label: "flag\(index)", type: .bool, databaseTypeName: "bool")]))
        }
        cases.append(cases[0])
        for (sql, columns) in cases + cases.reversed() {
            let parsed = try ParsedSQL(sql, dialect: .postgres)
            // Through a pipeline, and through a cursor.
            #expect(try connection.queryAll([BoundStatement(parsed, [])])[0].columns == columns, "\(sql)")
            let cursor = try connection.query(parsed, [], options: QueryOptions())
            #expect(cursor.columns == columns, "\(sql)")
            while try cursor.next() {}
            cursor.close()
        }
    }

    // MARK: reset

    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func resetAfterAbandonedCursorsAndTransactions() throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }

        // A half-read single-row cursor inside a transaction.
        try connection.begin(readOnly: false)
        let stream = try ParsedSQL("SELECT generate_series(1, 10000000) AS n", dialect: .postgres)
        let cursor = try connection.query(stream, [], options: QueryOptions())
        #expect(try cursor.next())
        #expect(try cursor.next())
        let busy = #expect(throws: DatabaseError.self) { try connection.rows("SELECT 1") }
        #expect(busy?.code == .unsupported)
        #expect(connection.reset())
        #expect(connection.isInTransaction == false)
        #expect(try cursor.next() == false)
        #expect(try connection.scalar("SELECT 4") == .integer(4))

        // A half-read server-side cursor; reset rolls its transaction back.
        try connection.begin(readOnly: true)
        let serverCursor = try connection.query(stream, [], options: QueryOptions(interleaved: true, batchSize: 3))
        #expect(try serverCursor.next())
        #expect(connection.reset())
        #expect(connection.isInTransaction == false)
        // Closing the stale cursor later must not touch the next transaction.
        try connection.begin(readOnly: false)
        serverCursor.close()
        #expect(try connection.scalar("SELECT 5") == .integer(5))
        try connection.commit()

        // A failed transaction.
        try connection.begin(readOnly: false)
        _ = #expect(throws: DatabaseError.self) { try connection.rows("SELECT * FROM no_such_table") }
        #expect(connection.isInTransaction)
        #expect(connection.reset())
        #expect(connection.isInTransaction == false)
        #expect(try connection.scalar("SELECT 6") == .integer(6))
        #expect(connection.isBroken == false)
    }

    // MARK: Bulk insert

    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func bulkInsertRoundTripsAwkwardValues() throws {
        let quotedTable = "\"odd \"\"table\"\"\""  // the identifier  odd "table"
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        try connection.withScratchSchema { schema in
            try connection.executeScript(
                """
                CREATE TABLE \(quotedTable) (id int8 PRIMARY KEY, "text col" text, b bytea, d date, ts timestamptz,
                    n numeric, tags text[], j jsonb, f float8, flag bool)
                """
            )
            var rows: [[SQLValue]] = [
                [
                    1, "tab\there", .bytes([0x5c, 0x09, 0x0a, 0x00]), .date(days: 0), .timestamp(microseconds: 1_500_000),
                    .decimal("1.10"), .array([.text("x\ty"), .null, .text("a\\b\"c")]), .json(#"{"s": "a\nb"}"#),
                    .double(-0.5), true,
                ],
                [2, "new\nline\r\nand \\ backslash \\N", nil, nil, nil, nil, nil, nil, nil, nil],
                [3, "\\N", .bytes([]), .date(days: -719_162), .timestamp(microseconds: -1), .decimal("NaN"), .array([]),
                 .json("null"), .double(.infinity), false],
                [4, "", nil, nil, nil, nil, .array([.text("NULL")]), nil, nil, nil],
            ]
            for id in 5...1500 {
                let text = String(repeating: "é\\\t", count: 40)
                rows.append([.integer(Int64(id)), .text(text), nil, nil, nil, nil, nil, nil, nil, nil])
            }
            let inserter = try connection.bulkInsert(
                into: "\(schema).odd \"table\"",
                columns: ["id", "text col", "b", "d", "ts", "n", "tags", "j", "f", "flag"]
            )
            for row in rows {
                try inserter.append(row)
            }
            let shortRow = #expect(throws: DatabaseError.self) { try inserter.append([1]) }
            #expect(shortRow?.code == .invalidValue)
            #expect(try inserter.finish() == rows.count)
            let stored = try connection.rows("SELECT * FROM \(quotedTable) ORDER BY id")
            #expect(stored.count == rows.count)
            for (storedRow, row) in zip(stored, rows) {
                #expect(storedRow == row)
            }

            // An abandoned bulk insert stores nothing and leaves the connection usable.
            let abandoned = try connection.bulkInsert(into: "odd \"table\"", columns: ["id"])
            try abandoned.append([9999])
            #expect(connection.reset())
            #expect(try connection.scalar("SELECT count(*) FROM \(quotedTable) WHERE id = 9999") == .integer(0))
        }
    }
}
