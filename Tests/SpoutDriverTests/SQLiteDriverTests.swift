import Foundation
import SpoutCore
import Synchronization
import Testing

@testable import SpoutSQLite

/// Integration tests of the SQLite driver against real database files (one per test).
@Suite struct SQLiteDriverTests {
    /// A recursive CTE over the integers 1...limit, selecting `select` (`x` or an aggregate).
    static func counting(to limit: Int, select: String = "count(*)") -> String {
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < \(limit)) SELECT \(select) FROM c"
    }

    /// Counts to a billion: far longer than any test waits, so only a timeout or cancel ends it.
    static let countToABillion = Self.counting(to: 1_000_000_000)

    // MARK: URLs

    @Test func parsesURLs() throws {
        let relative = try SQLiteDriver(url: "sqlite:data/spout.sqlite")
        #expect(relative.path == "data/spout.sqlite")
        #expect(relative.dialect == .sqlite)
        #expect(relative.hasReadOnlyConnections)
        #expect(try SQLiteDriver(url: "sqlite:/tmp/x.db").path == "/tmp/x.db")
        #expect(try SQLiteDriver(url: "sqlite::memory:").path == nil)
        for url in ["postgresql://localhost/db", "sqlite:", "sqlite://host/x.db", "/tmp/x.db", "SQLITE:x.db"] {
            #expect(sqliteErrorCode { _ = try SQLiteDriver(url: url) } == .invalidURL, "\(url)")
        }
    }

    @Test func readOnlyConnectionToMissingFileFails() throws {
        try SQLiteTestDatabase.with { database in
            #expect(sqliteErrorCode { _ = try database.connect(readOnly: true) } == .connectionFailed)
            #expect(!FileManager.default.fileExists(atPath: database.path))
        }
    }

    // MARK: Column types and values

    @Test func columnTypesFollowDeclaredTypes() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            try connection.executeScript(
                """
                CREATE TABLE declared (
                    a INT, b BIGINT, c BOOLEAN, d DATE, e DATETIME, f TIMESTAMP, g TIME, h TIME(3), i JSON,
                    j VARCHAR(20), k TEXT, l CLOB, m BLOB, n REAL, o FLOAT, p DOUBLE PRECISION,
                    q NUMERIC, r DECIMAL(10,2), s UUID, t, u date, v DATEISH
                )
                """)
            let cursor = try connection.query(
                sqliteSQL("SELECT *, 1 + 1 AS expression, a AS alias FROM declared"), [], options: QueryOptions())
            defer { cursor.close() }
            let expected: [(String, ColumnType)] = [
                ("a", .integer), ("b", .integer), ("c", .bool), ("d", .date), ("e", .timestamp), ("f", .timestamp),
                ("g", .time), ("h", .time), ("i", .json), ("j", .text), ("k", .text), ("l", .text), ("m", .bytes),
                ("n", .double), ("o", .double), ("p", .double), ("q", .decimal), ("r", .decimal), ("s", .unknown),
                ("t", .unknown), ("u", .date), ("v", .unknown), ("expression", .unknown), ("alias", .integer),
            ]
            #expect(cursor.columns == expected.map { Column(label: $0.0, type: $0.1) })
            #expect(try cursor.next() == false)
        }
    }

    @Test func valuesFollowDeclaredTypeThenStorageClass() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            try connection.executeScript(
                """
                CREATE TABLE typed (
                    id INTEGER PRIMARY KEY, i INT, r REAL, t TEXT, d DATE, ts DATETIME, tm TIME, b BOOLEAN,
                    j JSON, bl BLOB, dec DECIMAL
                );
                INSERT INTO typed VALUES
                    (1, 42, 1.5, 'hello', '9999-01-01', '2024-02-29 12:34:56.789', '13:45:00', 1, '{"a":[1,2]}',
                     x'00ff', 7),
                    (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
                    (3, 'abc', 3, 4, 'not a date', 'garbage', 5, 0, 6, 'text in blob', 2.5),
                    (4, 2.5, -0.25, x'01', '1970-01-01', '1970-01-01T00:00:00+01:00', '00:00:00.5', 2, '[]',
                     12, '12.50'),
                    (5, x'02', 7, '', '2024-02-30', '2024-02-29', 'noon', 'yes', 'null', 1.5, 'NaN');
                """)
            let rows = try connection.sqliteRows("SELECT i, r, t, d, ts, tm, b, j, bl, dec FROM typed ORDER BY id")
            #expect(
                rows[0] == [
                    .integer(42), .double(1.5), .text("hello"), .date(days: 2_932_532),
                    .timestamp(microseconds: 1_709_210_096_789_000), .time("13:45:00"), .bool(true),
                    .json("{\"a\":[1,2]}"), .bytes([0x00, 0xFF]), .integer(7),
                ])
            #expect(rows[1] == Array(repeating: SQLValue.null, count: 10))
            #expect(
                rows[2] == [
                    .text("abc"), .double(3), .text("4"), .text("not a date"), .text("garbage"), .integer(5),
                    .bool(false), .integer(6), .text("text in blob"), .double(2.5),
                ])
            #expect(
                rows[3] == [
                    .double(2.5), .double(-0.25), .bytes([0x01]), .date(days: 0),
                    .timestamp(microseconds: -3_600_000_000), .time("00:00:00.5"), .integer(2), .json("[]"),
                    .integer(12), .double(12.5),
                ])
            #expect(
                rows[4] == [
                    .bytes([0x02]), .double(7), .text(""), .text("2024-02-30"), .text("2024-02-29"), .time("noon"),
                    .text("yes"), .json("null"), .double(1.5), .text("NaN"),
                ])
        }
    }

    @Test func decimalColumnsKeepTextDigits() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            try connection.executeScript("CREATE TABLE amounts (id INTEGER PRIMARY KEY, amount DECIMAL(30,9))")
            // NUMERIC affinity turns numeric text into numbers on insert; the declared type of a
            // compound SELECT comes from its first arm, so the other arms deliver text as typed.
            let rows = try connection.sqliteRows(
                """
                SELECT amount FROM amounts
                UNION ALL SELECT '12345678901234567890.123456789'
                UNION ALL SELECT '-0.50'
                UNION ALL SELECT '1e5'
                UNION ALL SELECT 3
                """)
            #expect(
                rows == [
                    [.decimal("12345678901234567890.123456789")], [.decimal("-0.50")], [.text("1e5")], [.integer(3)],
                ])
        }
    }

    @Test func expressionColumnsAreReadByStorageClass() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            let cursor = try connection.query(
                sqliteSQL(
                    """
                    SELECT 1 + 1 AS sum, 1.5 * 2 AS product, 'x' || 'y' AS joined, x'0102' AS raw, NULL AS empty,
                        CAST(x'ff61' AS TEXT) AS invalid
                    """), [], options: QueryOptions())
            defer { cursor.close() }
            #expect(cursor.columns.map(\.type) == Array(repeating: ColumnType.unknown, count: 6))
            #expect(cursor.columns.map(\.label) == ["sum", "product", "joined", "raw", "empty", "invalid"])
            #expect(try cursor.next())
            #expect((0..<6).map { cursor.value(at: $0) } == [
                .integer(2), .double(3), .text("xy"), .bytes([1, 2]), .null, .text("\u{FFFD}a"),
            ])
            #expect(try cursor.next() == false)
            #expect(try cursor.next() == false)
        }
    }

    /// The cursor's own JSON (``SQLiteJSONWriter``, what streams use) is byte for byte what
    /// ``JSONText`` writes for ``SQLiteCursor/value(at:)``, for every storage class in every
    /// kind of declared column: NULL, integers at the extremes, reals, ASCII and non-ASCII
    /// text, invalid UTF-8, text that needs escaping, blobs, dates and text that is not one.
    @Test(arguments: [DateFormat.epochMilliseconds, .iso8601])
    func writtenJSONMatchesTheValues(dateFormat: DateFormat) throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            let columns = "i INTEGER, t TEXT, d DATE, b BOOLEAN, r REAL, n NUMERIC, j JSON, x BLOB, u, ts TIMESTAMP, tm TIME"
            let values = [
                "1, 'plain', '2024-02-29', 1, 1.5, '12.50', '{\"a\":1}', x'00ff', NULL, '2024-01-02 03:04:05', '10:11:12'",
                "NULL, 'caf\u{E9} \"q\" \\ ' || char(10) || char(1), 'not a date', 2, 3, 'NaN', '[1]', NULL, 'x', 'soon', 5",
                "'text', CAST(x'C328' AS TEXT), 20240229, 0, NULL, 7, NULL, 'blob as text', 2.5, NULL, NULL",
                "-9223372036854775808, '', '1969-12-31', 'yes', -0.0, '-1', 'null', x'', 9223372036854775807, 3, x'01'",
                "0, 'tab' || char(9) || 'end', '1970-01-01', NULL, 1e300, 1.25, '{}', x'616263', -7, '1970-01-01T00:00:00Z', ''",
                "10, x'41', '2024-13-01', 1, 0.1, 'abc', 'x', 1, 'ascii', 1.5, 'noon'",
            ]
            try connection.executeScript(
                "CREATE TABLE mixed (\(columns)); " + values.map { "INSERT INTO mixed VALUES (\($0));" }.joined(separator: " "))
            let sql = try sqliteSQL("SELECT *, i + 1 AS expression FROM mixed ORDER BY rowid")

            let written = CollectingSink()
            try RowStream(sql).write(as: .json(pretty: false), to: written, on: connection, dateFormat: dateFormat)

            let expected = CollectingSink()
            var out = ChunkedOutput(sink: expected)
            let cursor = try connection.query(sql, [], options: QueryOptions())
            defer { cursor.close() }
            out.append(UInt8(ascii: "["))
            var rows = 0
            while try cursor.next() {
                if rows > 0 { out.append(UInt8(ascii: ",")) }
                for (index, column) in cursor.columns.enumerated() {
                    out.append(UInt8(ascii: index == 0 ? "{" : ","))
                    JSONText.writeString(column.label, to: &out)
                    out.append(UInt8(ascii: ":"))
                    JSONText.writeValue(cursor.value(at: index), dateFormat: dateFormat, to: &out)
                }
                out.append(UInt8(ascii: "}"))
                rows += 1
            }
            out.append(UInt8(ascii: "]"))
            try out.finish()
            #expect(rows == values.count)
            #expect(written.text == expected.text)
            #expect(written.bytes == expected.bytes)

            // Off a row (the cursor ended), a row written whole is nulls, as each value would be.
            let ended = CollectingSink()
            var endedOut = ChunkedOutput(sink: ended)
            try #require(cursor as? any JSONWritingCursor).writeJSONObject(
                try #require(CompactObjectLayout(keys: ["i", "t"])), dateFormat: dateFormat, to: &endedOut)
            try endedOut.finish()
            #expect(ended.text == #"{"i":null,"t":null}"#)
        }
    }

    // MARK: Parameters

    @Test func bindsEveryValueType() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            let cases: [(SQLValue, SQLValue, String)] = [
                (.null, .null, "null"),
                (.integer(-9_223_372_036_854_775_808), .integer(-9_223_372_036_854_775_808), "integer"),
                (.double(2.5), .double(2.5), "real"),
                (.decimal("12.50"), .text("12.50"), "text"),
                (.bool(true), .integer(1), "integer"),
                (.bool(false), .integer(0), "integer"),
                (.text("héllo \"quoted\""), .text("héllo \"quoted\""), "text"),
                (.text(""), .text(""), "text"),
                (.date(days: 2_932_532), .text("9999-01-01"), "text"),
                (.timestamp(microseconds: 1_709_210_096_789_000), .text("2024-02-29 12:34:56.789000"), "text"),
                (.timestamp(microseconds: 0), .text("1970-01-01 00:00:00"), "text"),
                (.time("08:15:00"), .text("08:15:00"), "text"),
                (.json("{\"a\":1}"), .text("{\"a\":1}"), "text"),
                (.bytes([1, 2, 255]), .bytes([1, 2, 255]), "blob"),
                (.bytes([]), .bytes([]), "blob"),
                (
                    .array([1, "a\"b\n", nil, true, 2.5, .decimal("1.10"), .date(days: 0), .array([2])]),
                    .text("[1,\"a\\\"b\\n\",null,true,2.5,1.10,\"1970-01-01\",[2]]"), "text"
                ),
            ]
            for (value, expected, storage) in cases {
                let rows = try connection.sqliteRows("SELECT :v AS v, typeof(:v) AS t", [value])
                #expect(rows == [[expected, .text(storage)]], "\(value)")
            }
            let expanded = try connection.sqliteRows(
                "SELECT value FROM json_each(:list) ORDER BY key", [.array([3, 1, "x"])])
            #expect(expanded == [[.integer(3)], [.integer(1)], [.text("x")]])
        }
    }

    @Test func typedValuesRoundTripThroughTypedColumns() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            try connection.executeScript(
                "CREATE TABLE typed (d DATE, ts TIMESTAMP, tm TIME, b BOOLEAN, j JSON, bl BLOB, t TEXT, i INTEGER)")
            let row: [SQLValue] = [
                .date(days: -719_528), .timestamp(microseconds: 1_709_210_096_789_123), .time("23:59:59"),
                .bool(false), .json("[1,{\"b\":null}]"), .bytes([0, 1, 2]), .text("ünïcode ✓"), .integer(Int64.max),
            ]
            #expect(try connection.sqliteExecute("INSERT INTO typed VALUES (:a, :b, :c, :d, :e, :f, :g, :h)", row) == 1)
            #expect(try connection.sqliteRows("SELECT * FROM typed") == [row])
        }
    }

    @Test func repeatedParametersBindOnce() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            let sql = try sqliteSQL("SELECT :a + :a AS twice, :b AS b, :a AS again")
            #expect(sql.text == "SELECT ?1 + ?1 AS twice, ?2 AS b, ?1 AS again")
            let cursor = try connection.query(sql, [20, "x"], options: QueryOptions())
            defer { cursor.close() }
            #expect(try cursor.next())
            #expect([cursor.value(at: 0), cursor.value(at: 1), cursor.value(at: 2)] == [40, "x", 20])
            #expect(sqliteErrorCode { _ = try connection.sqliteRows("SELECT :a, :b", [1]) } == .invalidValue)
            #expect(sqliteErrorCode { _ = try connection.sqliteRows("SELECT :a", [1, 2]) } == .invalidValue)
        }
    }

    // MARK: Statement cache and interleaving

    @Test func statementCacheReusesIdleStatementsOnly() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            try connection.executeScript(
                "CREATE TABLE numbers (x INTEGER); INSERT INTO numbers VALUES (1), (2), (3), (4), (5), (6), (7), (8);")
            let source = "SELECT x FROM numbers WHERE x > :min ORDER BY x"
            let text = try sqliteSQL(source).text
            #expect(try connection.sqliteRows(source, [6]) == [[7], [8]])
            let cached = try #require(connection.cachedStatementHandle(for: text))
            #expect(try connection.sqliteRows(source, [7]) == [[8]])
            #expect(connection.cachedStatementHandle(for: text) == cached)

            // Two cursors of the same SQL at once, stepped alternately.
            let first = try connection.query(sqliteSQL(source), [0], options: QueryOptions(interleaved: true))
            let second = try connection.query(sqliteSQL(source), [5], options: QueryOptions(interleaved: true))
            var firstValues: [SQLValue] = []
            var secondValues: [SQLValue] = []
            var firstMore = true
            var secondMore = true
            while firstMore || secondMore {
                if firstMore, try first.next() {
                    firstValues.append(first.value(at: 0))
                } else {
                    firstMore = false
                }
                if secondMore, try second.next() {
                    secondValues.append(second.value(at: 0))
                } else {
                    secondMore = false
                }
            }
            first.close()
            second.close()
            #expect(firstValues == [1, 2, 3, 4, 5, 6, 7, 8])
            #expect(secondValues == [6, 7, 8])
            #expect(connection.cachedStatementCount == 1)
            #expect(connection.cachedStatementHandle(for: text) == cached)
            #expect(try connection.sqliteRows(source, [4]) == [[5], [6], [7], [8]])
            #expect(connection.cachedStatementHandle(for: text) == cached)
        }
    }

    @Test func cachedStatementColumnsFollowSchemaChanges() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            let other = try database.connect()
            defer { other.close() }
            try connection.executeScript("CREATE TABLE t (x INT); INSERT INTO t VALUES (1);")
            let source = "SELECT * FROM t"
            let before = try connection.query(sqliteSQL(source), [], options: QueryOptions())
            #expect(before.columns == [Column(label: "x", type: .integer)])
            before.close()
            try other.executeScript("ALTER TABLE t ADD COLUMN y DATE DEFAULT '2000-01-01'")
            let after = try connection.query(sqliteSQL(source), [], options: QueryOptions())
            defer { after.close() }
            #expect(connection.cachedStatementCount == 1)
            #expect(after.columns == [Column(label: "x", type: .integer), Column(label: "y", type: .date)])
            #expect(try after.next())
            #expect([after.value(at: 0), after.value(at: 1)] == [1, .date(days: 10_957)])
        }
    }

    @Test func queriesInterleaveWithAnOpenCursor() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            try connection.executeScript(
                """
                CREATE TABLE parents (id INTEGER PRIMARY KEY, name TEXT);
                CREATE TABLE children (parent_id INTEGER, name TEXT);
                CREATE TABLE visits (parent_id INTEGER);
                INSERT INTO parents VALUES (1, 'a'), (2, 'b'), (3, 'c');
                INSERT INTO children VALUES (1, 'a1'), (1, 'a2'), (3, 'c1');
                """)
            let parents = try connection.query(
                sqliteSQL("SELECT id, name FROM parents ORDER BY id"), [], options: QueryOptions(interleaved: true))
            defer { parents.close() }
            var result: [String: [SQLValue]] = [:]
            while try parents.next() {
                let id = parents.value(at: 0)
                try connection.sqliteExecute("INSERT INTO visits VALUES (:id)", [id])
                let children = try connection.sqliteRows(
                    "SELECT name FROM children WHERE parent_id = :id ORDER BY name", [id])
                guard case .text(let name) = parents.value(at: 1) else { Issue.record("no name"); return }
                result[name] = children.map { $0[0] }
            }
            #expect(result == ["a": ["a1", "a2"], "b": [], "c": ["c1"]])
            #expect(try connection.sqliteScalar("SELECT count(*) FROM visits") == 3)
        }
    }

    // MARK: WAL and read-only connections

    @Test func walReaderIsNotBlockedByWriterAndSeesOnlyCommittedRows() throws {
        try SQLiteTestDatabase.with(busyTimeoutMilliseconds: 200) { database in
            let writer = try database.connect()
            defer { writer.close() }
            try writer.executeScript(
                """
                CREATE TABLE items (id INTEGER PRIMARY KEY, label TEXT);
                WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 10000)
                INSERT INTO items (label) SELECT 'item ' || x FROM n;
                """)
            #expect(try writer.sqliteScalar("PRAGMA journal_mode") == "wal")
            let reader = try database.connect(readOnly: true)
            defer { reader.close() }
            let otherReader = try database.connect(readOnly: true)
            defer { otherReader.close() }

            let cursor = try reader.query(sqliteSQL("SELECT id FROM items ORDER BY id"), [], options: QueryOptions())
            defer { cursor.close() }
            var read = 0
            while read < 10, try cursor.next() { read += 1 }

            try writer.begin(readOnly: false)
            #expect(try writer.sqliteExecute("INSERT INTO items (label) VALUES ('uncommitted')") == 1)
            #expect(try otherReader.sqliteScalar("SELECT count(*) FROM items") == 10000)
            #expect(try writer.sqliteScalar("SELECT count(*) FROM items") == 10001)
            try writer.commit()

            while try cursor.next() { read += 1 }
            #expect(read == 10000)
            #expect(try reader.sqliteScalar("SELECT count(*) FROM items") == 10001)
            #expect(try otherReader.sqliteScalar("SELECT count(*) FROM items") == 10001)
        }
    }

    @Test func readOnlyConnectionsAndTransactionsRejectWrites() throws {
        try SQLiteTestDatabase.with { database in
            let writer = try database.connect()
            defer { writer.close() }
            try writer.executeScript("CREATE TABLE items (id INTEGER PRIMARY KEY)")
            let reader = try database.connect(readOnly: true)
            defer { reader.close() }
            #expect(reader.isReadOnly)
            #expect(sqliteErrorCode { try reader.sqliteExecute("INSERT INTO items VALUES (1)") } == .readOnly)
            #expect(sqliteErrorCode { try reader.executeScript("CREATE TABLE other (x)") } == .readOnly)
            #expect(try reader.sqliteScalar("SELECT count(*) FROM items") == 0)

            try writer.begin(readOnly: true)
            #expect(sqliteErrorCode { try writer.sqliteExecute("INSERT INTO items VALUES (1)") } == .readOnly)
            try writer.rollback()
            #expect(try writer.sqliteExecute("INSERT INTO items VALUES (1)") == 1)
            #expect(!reader.isBroken)
            #expect(!writer.isBroken)
        }
    }

    @Test func readOnlySessionRejectsWritesOutsideWriteTransactions() throws {
        try SQLiteTestDatabase.with { database in
            let writer = try database.connect()
            defer { writer.close() }
            try writer.executeScript("CREATE TABLE items (id INTEGER PRIMARY KEY)")
            try writer.setReadOnly(true)
            #expect(sqliteErrorCode { try writer.sqliteExecute("INSERT INTO items VALUES (1)") } == .readOnly)
            // An explicit write transaction lifts it until the transaction ends.
            try writer.begin(readOnly: false)
            #expect(try writer.sqliteExecute("INSERT INTO items VALUES (1)") == 1)
            try writer.commit()
            #expect(sqliteErrorCode { try writer.sqliteExecute("INSERT INTO items VALUES (2)") } == .readOnly)
            // reset() restores the session setting after an abandoned write transaction too.
            try writer.begin(readOnly: false)
            #expect(writer.reset())
            #expect(sqliteErrorCode { try writer.sqliteExecute("INSERT INTO items VALUES (2)") } == .readOnly)
            try writer.setReadOnly(false)
            #expect(try writer.sqliteExecute("INSERT INTO items VALUES (2)") == 1)

            let reader = try database.connect(readOnly: true)
            defer { reader.close() }
            try reader.setReadOnly(true)
            #expect(sqliteErrorCode { try reader.setReadOnly(false) } == .readOnly)
            #expect(try reader.sqliteScalar("SELECT count(*) FROM items") == 2)
        }
    }

    @Test func queryAllRunsStatementsInOrderAndStopsAtTheFirstError() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            try connection.executeScript("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)")
            _ = try connection.sqliteExecute("INSERT INTO items VALUES (1, 'a'), (2, 'b')")
            let all = try sqliteSQL("SELECT id, name FROM items ORDER BY id")
            let one = try sqliteSQL("SELECT name FROM items WHERE id = :id")
            let results = try connection.queryAll([
                BoundStatement(all, []), BoundStatement(one, try one.bind(["id": .integer(2)])),
                BoundStatement(one, try one.bind(["id": .integer(9)])),
            ])
            #expect(results.map(\.rows) == [[[.integer(1), .text("a")], [.integer(2), .text("b")]], [[.text("b")]], []])
            #expect(results.map { $0.columns.map(\.label) } == [["id", "name"], ["name"], ["name"]])
            let broken = try sqliteSQL("SELECT * FROM no_such_table")
            #expect(throws: DatabaseError.self) {
                try connection.queryAll([BoundStatement(all, []), BoundStatement(broken, [])])
            }
            #expect(try connection.sqliteScalar("SELECT count(*) FROM items") == 2)
        }
    }

    // MARK: Errors

    @Test func mapsConstraintAndSQLErrors() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            try connection.executeScript(
                """
                CREATE TABLE parents (id INTEGER PRIMARY KEY, code TEXT UNIQUE);
                CREATE TABLE children (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL REFERENCES parents (id));
                INSERT INTO parents VALUES (1, 'a');
                """)
            let failures: [(String, DatabaseError.Code)] = [
                ("INSERT INTO parents VALUES (2, 'a')", .uniqueViolation),
                ("INSERT INTO parents VALUES (1, 'b')", .uniqueViolation),
                ("INSERT INTO children VALUES (1, 99)", .constraintViolation),
                ("INSERT INTO children VALUES (1, NULL)", .constraintViolation),
            ]
            for (sql, code) in failures {
                #expect(sqliteErrorCode { try connection.sqliteExecute(sql) } == code, "\(sql)")
            }
            #expect(sqliteErrorCode { _ = try connection.sqliteRows("SELEC 1") } == .invalidSQL)
            #expect(sqliteErrorCode { _ = try connection.sqliteRows("SELECT * FROM missing") } == .invalidSQL)
            #expect(sqliteErrorCode { try connection.executeScript("CREATE TABL x (y)") } == .invalidSQL)

            do {
                try connection.sqliteExecute("INSERT INTO parents VALUES (3, 'a')")
                Issue.record("the insert should fail")
            } catch let error as DatabaseError {
                #expect(error.sqlState == "2067")
                #expect(error.message.contains("UNIQUE"))
                #expect(error.description == "database error: unique violation")
            }
            #expect(try connection.sqliteExecute("INSERT INTO children VALUES (1, 1)") == 1)
            #expect(!connection.isBroken)
        }
    }

    // MARK: Timeouts and cancellation

    @Test func statementTimeoutStopsALongQuery() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            try connection.setStatementTimeout(milliseconds: 100)
            #expect(sqliteErrorCode { _ = try connection.sqliteRows(Self.countToABillion) } == .statementTimeout)
            #expect(!connection.isBroken)
            #expect(try connection.sqliteScalar("SELECT 41 + 1") == 42)
            try connection.setStatementTimeout(milliseconds: nil)
            #expect(try connection.sqliteScalar(Self.counting(to: 100_000)) == 100_000)
        }
    }

    @Test func cursorKeepsTheDeadlineOfItsQuery() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            try connection.setStatementTimeout(milliseconds: 50)
            let cursor = try connection.query(sqliteSQL(Self.counting(to: 1_000_000_000, select: "x")), [], options: QueryOptions())
            defer { cursor.close() }
            #expect(try cursor.next())
            Thread.sleep(forTimeInterval: 0.2)
            // A statement started now has its own deadline ...
            #expect(try connection.sqliteScalar("SELECT 1") == 1)
            // ... while the cursor's deadline has passed: it stops within the next progress check.
            let code = sqliteErrorCode {
                for _ in 0..<1_000_000 { _ = try cursor.next() }
            }
            #expect(code == .statementTimeout)
            #expect(try cursor.next() == false)
        }
    }

    /// A streamed (interleaved) cursor counts only the time spent stepping, renewed after each
    /// batch: waiting for a slow client between rows never times it out, a slow step still does.
    @Test func interleavedCursorCountsOnlyItsStepping() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            try connection.setStatementTimeout(milliseconds: 50)
            let quick = try connection.query(
                sqliteSQL(Self.counting(to: 1_000, select: "x")), [], options: QueryOptions(interleaved: true, batchSize: 10))
            defer { quick.close() }
            var rows = 0
            while try quick.next() {
                rows += 1
                // 40 pauses of 10 ms: far more waiting than the timeout, none of it counted.
                if rows % 25 == 0 { Thread.sleep(forTimeInterval: 0.01) }
            }
            #expect(rows == 1_000)

            // One row at once, then a step that counts to a billion before the next: stopped.
            let slow = try connection.query(
                sqliteSQL(
                    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) "
                        + "SELECT x FROM c WHERE x = 1 OR x = 1000000000"),
                [], options: QueryOptions(interleaved: true, batchSize: 10))
            defer { slow.close() }
            #expect(try slow.next())
            Thread.sleep(forTimeInterval: 0.2)
            #expect(sqliteErrorCode { _ = try slow.next() } == .statementTimeout)
            #expect(!connection.isBroken)
        }
    }

    @Test func cancelFromAnotherThreadStopsTheQuery() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            // A safety net: a cancel that never lands fails the test as a timeout instead of hanging.
            try connection.setStatementTimeout(milliseconds: 120_000)
            let canceller = SQLiteCanceller(connection: connection)
            canceller.start()
            let code = sqliteErrorCode { _ = try connection.sqliteRows(Self.countToABillion) }
            canceller.stopAndWait()
            #expect(code == .cancelled)
            #expect(!connection.isBroken)
            #expect(try connection.sqliteScalar("SELECT 'still usable'") == "still usable")
        }
    }

    // MARK: Memory databases

    @Test func memoryDatabaseIsSharedByTheConnectionsOfOneDriver() throws {
        let driver = try SQLiteDriver(url: "sqlite::memory:")
        let first = try sqliteConnection(driver.connect(readOnly: false, statistics: QueryStatistics()))
        try first.executeScript("CREATE TABLE shared (x INTEGER); INSERT INTO shared VALUES (1), (2);")
        let second = try sqliteConnection(driver.connect(readOnly: true, statistics: QueryStatistics()))
        #expect(try second.sqliteScalar("SELECT sum(x) FROM shared") == 3)
        #expect(sqliteErrorCode { try second.sqliteExecute("INSERT INTO shared VALUES (3)") } == .readOnly)
        first.close()
        second.close()
        // The driver keeps the database alive with no connection open ...
        let third = try sqliteConnection(driver.connect(readOnly: false, statistics: QueryStatistics()))
        defer { third.close() }
        #expect(try third.sqliteScalar("SELECT count(*) FROM shared") == 2)
        // ... and another driver's memory database is a different one.
        let otherDriver = try SQLiteDriver(url: "sqlite::memory:")
        let other = try sqliteConnection(otherDriver.connect(readOnly: false, statistics: QueryStatistics()))
        defer { other.close() }
        #expect(sqliteErrorCode { _ = try other.sqliteRows("SELECT * FROM shared") } == .invalidSQL)
    }

    // MARK: Bulk insert, statistics, streaming, lifecycle

    @Test func bulkInsertRoundTrip() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            try connection.executeScript(
                #"CREATE TABLE "odd ""table""" (id INTEGER PRIMARY KEY, "na""me" TEXT, born DATE, photo BLOB)"#)
            try connection.begin(readOnly: false)
            let inserter = try connection.bulkInsert(into: #"odd "table""#, columns: ["id", #"na"me"#, "born", "photo"])
            for id in 1...10_000 {
                try inserter.append([
                    .integer(Int64(id)), .text("name \(id)"), .date(days: Int64(id)), id % 2 == 0 ? .bytes([1]) : .null,
                ])
            }
            #expect(sqliteErrorCode { try inserter.append([1]) } == .invalidValue)
            #expect(sqliteErrorCode { try inserter.append([1, "duplicate", .null, .null]) } == .uniqueViolation)
            #expect(try inserter.finish() == 10_000)
            #expect(sqliteErrorCode { try inserter.append([20_000, "late", .null, .null]) } == .other)
            try connection.commit()
            let rows = try connection.sqliteRows(
                #"SELECT count(*), sum(id), count(photo), max(born) FROM "odd ""table""""#)
            #expect(rows == [[10_000, 50_005_000, 5_000, .text("1997-05-19")]])
            #expect(
                try connection.sqliteRows(#"SELECT "na""me", born FROM "odd ""table""" WHERE id = 3"#)
                    == [["name 3", .date(days: 3)]])
        }
    }

    @Test func statisticsCountQueriesAndExecutesOnly() throws {
        try SQLiteTestDatabase.with { database in
            let statistics = QueryStatistics()
            let connection = try database.connect(statistics: statistics)
            defer { connection.close() }
            try connection.executeScript("CREATE TABLE t (x INTEGER)")
            try connection.setStatementTimeout(milliseconds: 10_000)
            #expect(statistics.statementCount == 0)
            try connection.begin(readOnly: false)
            try connection.sqliteExecute("INSERT INTO t VALUES (1)")
            try connection.commit()
            #expect(statistics.statementCount == 1)
            let cursor = try connection.query(sqliteSQL("SELECT x FROM t"), [], options: QueryOptions())
            #expect(statistics.statementCount == 2)
            while try cursor.next() {}
            cursor.close()
            #expect(statistics.statementCount == 2)
            try connection.begin(readOnly: true)
            _ = try connection.sqliteRows("SELECT x FROM t")
            try connection.rollback()
            let inserter = try connection.bulkInsert(into: "t", columns: ["x"])
            try inserter.append([2])
            try inserter.append([3])
            #expect(try inserter.finish() == 2)
            #expect(statistics.statementCount == 4)
        }
    }

    @Test func executeReturnsTheRowsItChanged() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            #expect(try connection.sqliteExecute("CREATE TABLE t (x INTEGER)") == 0)
            #expect(try connection.sqliteExecute("INSERT INTO t VALUES (1), (2), (3)") == 3)
            #expect(try connection.sqliteExecute("UPDATE t SET x = x + 1 WHERE x >= :min", [2]) == 2)
            #expect(try connection.sqliteExecute("CREATE INDEX t_x ON t (x)") == 0)
            #expect(try connection.sqliteExecute("DELETE FROM t WHERE x = 99") == 0)
        }
    }

    @Test func streamsTwoMillionRows() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            let cursor = try connection.query(
                sqliteSQL(Self.counting(to: 2_000_000, select: "x")),
                [], options: QueryOptions())
            defer { cursor.close() }
            var count = 0
            var sum: Int64 = 0
            var last: Int64 = 0
            var ordered = true
            while try cursor.next() {
                guard case .integer(let x) = cursor.value(at: 0) else {
                    Issue.record("not an integer: \(cursor.value(at: 0))")
                    return
                }
                if x != last + 1 { ordered = false }
                last = x
                sum += x
                count += 1
            }
            #expect(count == 2_000_000)
            #expect(sum == 2_000_001_000_000)
            #expect(ordered)
        }
    }

    @Test func resetReturnsTheConnectionToIdle() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            try connection.executeScript("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2), (3);")
            let cursor = try connection.query(sqliteSQL("SELECT x FROM t"), [], options: QueryOptions())
            #expect(try cursor.next())
            try connection.begin(readOnly: false)
            try connection.sqliteExecute("INSERT INTO t VALUES (4)")
            try connection.setStatementTimeout(milliseconds: 1)
            #expect(connection.reset())
            #expect(!connection.isInTransaction)
            #expect(try cursor.next() == false)
            #expect(cursor.value(at: 0) == .null)
            #expect(try connection.sqliteScalar("SELECT count(*) FROM t") == 3)
            // reset() leaves the timeout to the pool, which sets its default after every reset;
            // once that is done a query longer than the old 1 ms limit completes.
            try connection.setStatementTimeout(milliseconds: nil)
            #expect(try connection.sqliteScalar(Self.counting(to: 300_000)) == 300_000)
            try connection.begin(readOnly: true)
            #expect(connection.reset())
            #expect(try connection.sqliteExecute("INSERT INTO t VALUES (5)") == 1)
        }
    }

    @Test func closeIsIdempotentAndBreaksTheConnection() throws {
        try SQLiteTestDatabase.with { database in
            let connection = try database.connect()
            let cursor = try connection.query(sqliteSQL("SELECT 1 UNION ALL SELECT 2"), [], options: QueryOptions())
            #expect(try cursor.next())
            #expect(!connection.isBroken)
            connection.close()
            connection.close()
            connection.cancel()
            #expect(connection.isBroken)
            #expect(!connection.reset())
            #expect(try cursor.next() == false)
            #expect(sqliteErrorCode { _ = try connection.sqliteRows("SELECT 1") } == .connectionLost)
        }
    }
}

/// Calls ``SQLiteConnection/cancel()`` from its own thread every few milliseconds until stopped,
/// so one call is sure to land while the query runs.
///
/// `@unchecked Sendable`: `thread` is set once by `start()` before the thread runs and not
/// touched afterwards; the flags are atomics and the semaphore is thread-safe.
private final class SQLiteCanceller: @unchecked Sendable {
    private let connection: SQLiteConnection
    private let stopped = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    init(connection: SQLiteConnection) {
        self.connection = connection
    }

    func start() {
        Thread.detachNewThread { [self] in
            while !self.stopped.load(ordering: .acquiring) {
                self.connection.cancel()
                usleep(5_000)
            }
            self.done.signal()
        }
    }

    func stopAndWait() {
        self.stopped.store(true, ordering: .releasing)
        self.done.wait()
    }
}
