import Foundation
import SpoutCore
import SpoutDrivers
import SpoutPostgres
import SpoutTestDatabases
import SpoutTestSupport
import Testing

@testable import SpoutSQLite

/// Row streams and attachments against real PostgreSQL and SQLite databases.
@Suite struct RowStreamTests {
    /// The same schema on both databases: every type of the value-mapping table that both
    /// databases can hold, and a three-level hierarchy for attachments.
    static func schema(_ dialect: SQLDialect) -> String {
        let (double, bytes, serial) = dialect == .postgres ? ("DOUBLE PRECISION", "BYTEA", "INTEGER") : ("DOUBLE", "BLOB", "INTEGER")
        return """
            CREATE TABLE typed (
                id \(serial) PRIMARY KEY, i BIGINT, r \(double), b BOOLEAN, t TEXT, d DATE,
                ts TIMESTAMP, tm TIME, j JSON, bl \(bytes));
            CREATE TABLE dept (dept_no CHAR(4) PRIMARY KEY, name VARCHAR(40) NOT NULL);
            CREATE TABLE emp (emp_no INTEGER PRIMARY KEY, dept_no CHAR(4) NOT NULL REFERENCES dept, name TEXT NOT NULL);
            CREATE TABLE title (emp_no INTEGER NOT NULL REFERENCES emp, title TEXT NOT NULL, from_date DATE NOT NULL);
            INSERT INTO typed VALUES
                (1, -7, 1.5, TRUE, 'tab\there "q" \\ é', '9999-01-01', '2020-02-29 13:14:15.5', '12:34:56', '{"k": [1, "x"]}', \(dialect == .postgres ? "'\\xdeadbeef'" : "x'deadbeef'")),
                (2, NULL, NULL, FALSE, '', '1953-09-02', '1969-12-31 23:59:59', '00:00:00', 'null', \(dialect == .postgres ? "''" : "x''")),
                (3, 9223372036854775807, -0.000001, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
            INSERT INTO dept VALUES ('d001', 'Marketing'), ('d002', 'Finance'), ('d003', 'Empty');
            INSERT INTO emp VALUES (10, 'd001', 'Ann'), (11, 'd001', 'Bob'), (12, 'd002', 'Cy');
            INSERT INTO title VALUES (10, 'Staff', '1990-01-01'), (10, 'Senior Staff', '1995-06-01'), (12, 'Engineer', '2000-01-01');
            """
    }

    static let typedQuery = """
        SELECT id, i, r, b, t, d AS "when.day", ts AS "when.instant", tm, j, bl FROM typed ORDER BY id
        """

    static func departments(in database: Database) throws -> RowStream {
        var stream = try database.query("""
            SELECT dept_no AS "departmentNumber", name FROM dept
            WHERE name <> :excluded ORDER BY dept_no
            """, ["excluded": "nobody"])
        var employees = RowStream("""
            SELECT emp_no AS "employeeNumber", name FROM emp
            WHERE dept_no = :departmentNumber ORDER BY emp_no
            """)
        employees.attach("titles", """
            SELECT title, from_date AS "fromDate" FROM title
            WHERE emp_no = :employeeNumber AND title <> :excluded ORDER BY from_date
            """)
        stream.attach("employees", employees)
        return stream
    }

    static func output(_ stream: RowStream, on database: Database, format: OutputFormat = .json(), shape: ResultShape = .array) throws -> String {
        let sink = CollectingSink()
        try database.withConnection(readOnly: true) { connection in
            _ = try stream.write(as: format, shape: shape, to: sink, on: connection)
        }
        return sink.text
    }

    /// Opens both databases with the schema loaded and runs `body` on each.
    static func withBothDatabases(_ body: (Database) throws -> Void) throws {
        let sqlite = TestDatabases.makeSQLiteDatabase()
        defer { sqlite.drop() }
        let postgres = try TestDatabases.makePostgresDatabase()
        defer { postgres.drop() }
        for temporary in [sqlite, postgres] {
            let database = try temporary.open()
            defer { database.close() }
            do {
                try database.withConnection(readOnly: false) { try $0.executeScript(self.schema($0.dialect)) }
                try body(database)
            } catch {
                Issue.record("\(database.dialect): \(String(reflecting: error))")
                throw error
            }
        }
    }

    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func bothDatabasesWriteTheSameBytes() throws {
        var outputs: [[String]] = []
        try Self.withBothDatabases { database in
            var results: [String] = []
            results.append(try Self.output(try database.query(Self.typedQuery), on: database))
            results.append(try Self.output(try database.query(Self.typedQuery), on: database, format: .jsonLines))
            results.append(try Self.output(try database.query(Self.typedQuery), on: database, format: .csv))
            results.append(try Self.output(try Self.departments(in: database), on: database))
            results.append(try Self.output(try Self.departments(in: database), on: database, format: .json(pretty: true)))
            results.append(try Self.output(try Self.departments(in: database), on: database, shape: .object))
            outputs.append(results)
        }
        #expect(outputs.count == 2)
        for (sqlite, postgres) in zip(outputs[0], outputs[1]) {
            #expect(sqlite == postgres)
        }
        #expect(outputs[0][0] == """
            [{"id":1,"i":-7,"r":1.5,"b":true,"t":"tab\\there \\"q\\" \\\\ é","when":{"day":253370764800000,"instant":1582982055500},"tm":"12:34:56","j":{"k": [1, "x"]},"bl":"3q2+7w=="},\
            {"id":2,"i":null,"r":null,"b":false,"t":"","when":{"day":-515376000000,"instant":-1000},"tm":"00:00:00","j":null,"bl":""},\
            {"id":3,"i":9223372036854775807,"r":-1e-06,"b":null,"t":null,"when":{"day":null,"instant":null},"tm":null,"j":null,"bl":null}]
            """)
        #expect(outputs[0][3] == """
            [{"departmentNumber":"d001","name":"Marketing","employees":[{"employeeNumber":10,"name":"Ann","titles":[{"title":"Staff","fromDate":631152000000},{"title":"Senior Staff","fromDate":801964800000}]},{"employeeNumber":11,"name":"Bob","titles":[]}]},\
            {"departmentNumber":"d002","name":"Finance","employees":[{"employeeNumber":12,"name":"Cy","titles":[{"title":"Engineer","fromDate":946684800000}]}]},\
            {"departmentNumber":"d003","name":"Empty","employees":[]}]
            """)
    }

    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func postgresSpecificValues() throws {
        let temporary = try TestDatabases.makePostgresDatabase()
        defer { temporary.drop() }
        let database = try temporary.open()
        defer { database.close() }
        let stream = try database.query("""
            SELECT 12.3400::numeric AS n, 'NaN'::numeric AS nan, 'NaN'::float8 AS fnan, '-Infinity'::float8 AS finf,
                   ARRAY[1, NULL, 3] AS ints, ARRAY['a"b', 'c,d'] AS texts, ARRAY['2000-01-01'::date] AS dates,
                   '{"b": 2,  "a": 1}'::jsonb AS jb, '2000-01-01 00:00:00+05'::timestamptz AS tz,
                   'a3bb189e-8bf9-3888-9912-ace4e6543002'::uuid AS u, 32767::int2 AS small
            """)
        #expect(try Self.output(stream, on: database, shape: .object) == """
            {"n":12.3400,"nan":null,"fnan":null,"finf":null,"ints":[1,null,3],"texts":["a\\"b","c,d"],"dates":[946684800000],\
            "jb":{"a": 1, "b": 2},"tz":946666800000,"u":"a3bb189e-8bf9-3888-9912-ace4e6543002","small":32767}
            """)
    }

    /// 1,000 parents with one attachment: the children come in batches, not one query each.
    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func attachmentsDoNotCostAQueryPerParent() throws {
        let temporary = try TestDatabases.makePostgresDatabase()
        defer { temporary.drop() }
        let database = try temporary.open()
        defer { database.close() }
        try database.withConnection(readOnly: false) { connection in
            try connection.executeScript("""
                CREATE TABLE parent AS SELECT g AS id FROM generate_series(1, 1000) g;
                CREATE TABLE child AS SELECT (g % 1000) + 1 AS parent_id, g AS n FROM generate_series(1, 3000) g;
                """)
        }
        var stream = try database.query("SELECT id FROM parent ORDER BY id")
        stream.attach("children", "SELECT n FROM child WHERE parent_id = :id ORDER BY n")
        let before = database.statistics.statementCount
        let json = try Self.output(stream, on: database)
        let statements = database.statistics.statementCount - before
        #expect(statements >= 2)
        #expect(statements <= 1 + 5, "the parent query and at most 5 child queries, got \(statements)")
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        #expect(parsed.count == 1000)
        #expect((parsed[4]["children"] as? [[String: Int]])?.map { $0["n"]! } == [4, 1004, 2004])
    }

    /// A child that echoes its parent's keys is typed by the parent's columns on both
    /// databases, whether it runs for one parent (each child statement itself, pipelined on
    /// PostgreSQL) or for many (batched), and one parent costs one statement per attachment.
    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func oneParentAndManyParentsTypeChildrenAlike() throws {
        var outputs: [String] = []
        try Self.withBothDatabases { database in
            func employees(_ condition: String) throws -> RowStream {
                var stream = try database.query("""
                    SELECT emp_no AS "employeeNumber", dept_no AS "departmentNumber" FROM emp
                    WHERE \(condition) ORDER BY emp_no
                    """)
                stream.attach("echo", "SELECT :employeeNumber AS n, :departmentNumber AS d")
                stream.attach("titles", "SELECT title FROM title WHERE emp_no = :employeeNumber ORDER BY from_date")
                return stream
            }
            let before = database.statistics.statementCount
            let one = try Self.output(try employees("emp_no = 10"), on: database, shape: .object)
            #expect(database.statistics.statementCount - before == 3, "\(database.dialect)")
            let many = try Self.output(try employees("emp_no >= 10"), on: database)
            outputs.append(one + "\n" + many)
        }
        #expect(outputs.count == 2)
        #expect(outputs.first == outputs.last)
        #expect(outputs.first == """
            {"employeeNumber":10,"departmentNumber":"d001","echo":[{"n":10,"d":"d001"}],"titles":[{"title":"Staff"},{"title":"Senior Staff"}]}
            [{"employeeNumber":10,"departmentNumber":"d001","echo":[{"n":10,"d":"d001"}],"titles":[{"title":"Staff"},{"title":"Senior Staff"}]},\
            {"employeeNumber":11,"departmentNumber":"d001","echo":[{"n":11,"d":"d001"}],"titles":[]},\
            {"employeeNumber":12,"departmentNumber":"d002","echo":[{"n":12,"d":"d002"}],"titles":[{"title":"Engineer"}]}]
            """)
    }

    /// A single-row response run event-driven (``PipelinedSingleRowPlan``) writes the bytes the cursor
    /// path writes, in two batches and with the same statements.
    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func singleRowPlanWritesWhatTheCursorPathWrites() async throws {
        try await Self.withEventDrivenConnection { database, connection in
            func employee(_ number: Int) throws -> RowStream {
                var stream = try database.query("""
                    SELECT emp_no AS "employeeNumber", dept_no AS "departmentNumber" FROM emp WHERE emp_no = :n
                    """, ["n": .integer(Int64(number))])
                stream.attach("echo", "SELECT :employeeNumber AS n, :departmentNumber AS d, :n AS argument")
                stream.attach("titles", "SELECT title, from_date AS \"fromDate\" FROM title WHERE emp_no = :employeeNumber ORDER BY from_date")
                return stream
            }
            func planned(_ stream: RowStream, _ shape: ResultShape, _ format: OutputFormat) async throws -> (String, Int) {
                let plan = try #require(try PipelinedSingleRowPlan(stream, shape: shape, format: format, children: PostgresChildQueries()))
                let before = database.statistics.statementCount
                let batches = try await connection.runEventDriven(plan.parent, session: nil) { try plan.batch(after: $0) }
                let sink = CollectingSink()
                try plan.write(batches, as: format, shape: shape, dateFormat: .epochMilliseconds, to: sink)
                return (sink.text, database.statistics.statementCount - before)
            }

            for number in [10, 11] {
                for format in [OutputFormat.json(), .jsonLines] {
                    let (text, statements) = try await planned(try employee(number), .object, format)
                    #expect(text == (try Self.output(try employee(number), on: database, format: format, shape: .object)))
                    #expect(statements == 3)
                }
            }
            let (ten, _) = try await planned(try employee(10), .object, .json())
            #expect(ten == """
                {"employeeNumber":10,"departmentNumber":"d001","echo":[{"n":10,"d":"d001","argument":"10"}],\
                "titles":[{"title":"Staff","fromDate":631152000000},{"title":"Senior Staff","fromDate":801964800000}]}
                """)
            let name = try database.query("SELECT name, emp_no FROM emp ORDER BY emp_no")
            #expect(try await planned(name, .scalar, .json()).0 == (try Self.output(name, on: database, shape: .scalar)))
            #expect(try await planned(name, .scalar, .csv).0 == (try Self.output(name, on: database, format: .csv, shape: .scalar)))
            // No row: the cursor path's error, after one statement.
            await #expect(throws: RowStreamError.noRow) { _ = try await planned(try employee(99), .object, .json()) }

            // What the plan leaves to the cursor path.
            #expect(try PipelinedSingleRowPlan(try employee(10), shape: .array, format: .json(), children: PostgresChildQueries()) == nil)
            #expect(try PipelinedSingleRowPlan(try employee(10), shape: .object, format: .csv, children: PostgresChildQueries()) == nil)
            #expect(try PipelinedSingleRowPlan(try employee(10), shape: .object, format: .json(), children: PerParentChildQueries(dialect: .sqlite)) == nil)
            #expect(try PipelinedSingleRowPlan(try Self.departments(in: database), shape: .object, format: .json(), children: PostgresChildQueries()) == nil)
            #expect(connection.canRunEventDriven(readOnly: true, statementTimeout: nil))
        }
    }

    /// Once the parent statement has answered, its children are sent with it (tentatively,
    /// for a parent row holding the request's arguments) and used only when the parent row
    /// that arrives is that row.
    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func singleRowPlanSendsForeseenChildrenWithTheParent() async throws {
        try await Self.withEventDrivenConnection { database, connection in
            func employee(_ number: Int, parent: String = "emp_no = :employeeNumber") throws -> RowStream {
                var stream = try database.query("""
                    SELECT emp_no AS "employeeNumber", dept_no AS "departmentNumber" FROM emp WHERE \(parent)
                    ORDER BY emp_no LIMIT 1
                    """, ["employeeNumber": .integer(Int64(number))])
                stream.attach("titles", "SELECT title FROM title WHERE emp_no = :employeeNumber ORDER BY from_date")
                // Fails for employee 10 only.
                stream.attach("ratio", "SELECT 10 / (:employeeNumber - 10) AS r")
                return stream
            }
            func planned(_ stream: RowStream) async throws -> ForeseeingRun {
                let plan = try #require(try PipelinedSingleRowPlan(stream, shape: .object, format: .json(), children: PostgresChildQueries()))
                let before = database.statistics.statementCount
                let batches = try await connection.runEventDriven(plan.parent, session: nil) { try plan.batch(after: $0) }
                let sink = CollectingSink()
                try plan.write(batches, as: .json(), shape: .object, dateFormat: .epochMilliseconds, to: sink)
                return ForeseeingRun(
                    text: sink.text, tentative: plan.parent.tentative.count, roundTrips: batches.count,
                    statements: database.statistics.statementCount - before)
            }

            // The parent has not answered yet: two round trips.
            let first = try await planned(try employee(12))
            #expect(first.text == #"{"employeeNumber":12,"departmentNumber":"d002","titles":[{"title":"Engineer"}],"ratio":[{"r":5}]}"#)
            #expect((first.tentative, first.roundTrips, first.statements) == (0, 2, 3))
            // Then one, with the same bytes as the cursor path.
            for number in [11, 12] {
                let run = try await planned(try employee(number))
                #expect(run.text == (try Self.output(try employee(number), on: database, shape: .object)))
                #expect((run.tentative, run.roundTrips, run.statements) == (2, 1, 3))
            }
            // No parent row: the children ran for nothing, and the error is the cursor path's.
            await #expect(throws: RowStreamError.noRow) { _ = try await planned(try employee(99)) }
            #expect(connection.canRunEventDriven(readOnly: true, statementTimeout: nil))

            // A parent row other than the one foreseen (employee 11 for argument 10): the children
            // built for 10 (one of which fails) are dropped, and those of 11 run after it.
            let other = "emp_no > :employeeNumber"
            _ = try await planned(try employee(10, parent: other))
            let run = try await planned(try employee(10, parent: other))
            #expect(run.text == #"{"employeeNumber":11,"departmentNumber":"d001","titles":[],"ratio":[{"r":10}]}"#)
            #expect(run.text == (try Self.output(try employee(10, parent: other), on: database, shape: .object)))
            #expect((run.tentative, run.roundTrips, run.statements) == (2, 2, 5))
            // Foreseen rightly, a child's own error is the response's, as on the cursor path.
            await #expect(throws: DatabaseError.self) { _ = try await planned(try employee(10)) }
            #expect(connection.canRunEventDriven(readOnly: true, statementTimeout: nil))
        }
    }

    /// Runs `body` with a PostgreSQL database holding ``schema(_:)`` and an event-driven
    /// connection leased from it read-only.
    static func withEventDrivenConnection(
        _ body: (Database, any EventDrivenConnection) async throws -> Void
    ) async throws {
        let postgres = try TestDatabases.makePostgresDatabase()
        defer { postgres.drop() }
        let database = try postgres.open()
        defer { database.close() }
        try database.withConnection(readOnly: false) { try $0.executeScript(Self.schema(.postgres)) }
        let lease = try database.leaseSoon(readOnly: true)
        defer { lease.release() }
        try lease.withConnection { _ in }
        let reader = try #require(lease.readerWithoutThread())
        try await body(database, try #require(reader as? any EventDrivenConnection))
    }

    /// What ``singleRowPlanSendsForeseenChildrenWithTheParent()`` observes of one run.
    struct ForeseeingRun {
        var text: String
        var tentative: Int
        var roundTrips: Int
        var statements: Int
    }

    /// A single row whose attachments have attachments streams each array in windows of its
    /// own: the bytes of that row in an array, in every JSON format and window size, and on
    /// PostgreSQL one statement per level and window.
    @Test(.enabled(if: TestDatabases.postgresEnabled))
    func singleRowStreamsDeepAttachmentsInWindows() throws {
        var outputs: [String] = []
        try Self.withBothDatabases { database in
            let stream = try Self.departments(in: database)
            func written(_ format: OutputFormat, shape: ResultShape, window: Int) throws -> (text: String, statements: Int) {
                let sink = CollectingSink()
                let before = database.statistics.statementCount
                try database.withConnection(readOnly: true) { connection in
                    _ = try stream.write(as: format, shape: shape, to: sink, on: connection, attachmentBatchSize: window)
                }
                return (sink.text, database.statistics.statementCount - before)
            }
            let array = try written(.json(), shape: .array, window: 500).text
            let pretty = try written(.json(pretty: true), shape: .object, window: 500).text
            for window in [1, 2, 500] {
                let object = try written(.json(), shape: .object, window: window)
                #expect(array.hasPrefix("[" + object.text + ","), "window \(window)")
                #expect(try written(.jsonLines, shape: .object, window: window).text == object.text + "\n")
                #expect(try written(.json(pretty: true), shape: .object, window: window).text == pretty)
                // d001 and its two employees: the department, the employees' cursor, then
                // their titles: per window on PostgreSQL, per employee on SQLite.
                let titles = database.dialect == .postgres ? (window == 1 ? 2 : 1) : 2
                #expect(object.statements == 2 + titles, "\(database.dialect), window \(window)")
            }
            outputs.append(pretty)
        }
        #expect(outputs.count == 2 && outputs.first == outputs.last)
        #expect(outputs.first == """
            {
              "departmentNumber": "d001",
              "name": "Marketing",
              "employees": [
                {
                  "employeeNumber": 10,
                  "name": "Ann",
                  "titles": [
                    {
                      "title": "Staff",
                      "fromDate": 631152000000
                    },
                    {
                      "title": "Senior Staff",
                      "fromDate": 801964800000
                    }
                  ]
                },
                {
                  "employeeNumber": 11,
                  "name": "Bob",
                  "titles": []
                }
              ]
            }

            """)
    }

    @Test("on SQLite each level's statement is prepared once and run again for each parent row")
    func sqliteAttachmentsUseOneCachedStatement() throws {
        let temporary = TestDatabases.makeSQLiteDatabase()
        defer { temporary.drop() }
        let database = try temporary.open()
        defer { database.close() }
        try database.withConnection(readOnly: false) { try $0.executeScript(Self.schema(.sqlite)) }
        try database.withConnection(readOnly: true) { connection in
            let sqlite = try #require(connection as? SQLiteConnection)
            let before = sqlite.cachedStatementCount
            for _ in 0..<2 {
                let sink = CollectingSink()
                _ = try Self.departments(in: database).write(as: .jsonLines, shape: .array, to: sink, on: connection)
                #expect(sink.text.split(separator: "\n").count == 3)
                // Departments, their employees, the employees' titles: one statement a level,
                // however many parents there are, and none more when the stream runs again.
                #expect(sqlite.cachedStatementCount - before == 3)
            }
        }
    }

    /// Millions of rows stream through in constant memory: run `spout export` in a child
    /// process and read its peak resident set from `wait4`.
    /// The PostgreSQL gate is per case: a clone without PostgreSQL still runs the SQLite one.
    @Test(arguments: SQLDialect.allCases)
    func fiveMillionRowsStreamInConstantMemory(_ dialect: SQLDialect) async throws {
        guard dialect == .sqlite || TestDatabases.postgresEnabled else { return }
        let sqlite = TestDatabases.makeSQLiteDatabase()
        defer { sqlite.drop() }
        let url = dialect == .postgres ? try TestDatabases.requirePostgresURL() : sqlite.url
        if dialect == .sqlite {
            // Read-only connections need the file to exist.
            let database = try sqlite.open()
            try database.withConnection(readOnly: false) { try $0.executeScript("CREATE TABLE IF NOT EXISTS marker (x INTEGER)") }
            database.close()
        }
        let sql = dialect == .postgres
            ? "SELECT g AS n, 'row ' || g AS label, DATE '2000-01-01' + (g % 1000) AS day FROM generate_series(1, 5000000) g"
            : "WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < 5000000) SELECT g AS n, 'row ' || g AS label FROM s"
        let result = try await ChildProcess.run(
            executable: ChildProcess.spoutExecutable(),
            arguments: ["export", "--database", url, "--format", "json", "--output", "/dev/null", sql]
        )
        #expect(result.status == 0, "spout export failed: \(result.standardError)")
        #expect(result.standardError.contains("5000000 rows"))
        #expect(result.peakResidentBytes > 0)
        #expect(result.peakResidentBytes < 64 * 1024 * 1024, "peak RSS \(result.peakResidentBytes / 1024 / 1024) MiB")
    }
}
