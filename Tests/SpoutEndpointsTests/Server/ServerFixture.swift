import Foundation
import HTTPTypes
import Logging
import SpoutCore
import SpoutEndpoints
import SpoutHTTP
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Synchronization
import Testing

/// The SQL the end-to-end routes use, per dialect.
struct TestSQL: Sendable {
    var schema: String
    var big: String
    var failLate: String
    var timeout: String
    /// Rows without end, streamed as they are produced (never materialized first).
    var endless: String

    static let sqlite = TestSQL(
        schema: """
            CREATE TABLE employees(emp_no INTEGER PRIMARY KEY, first_name TEXT NOT NULL CHECK (length(first_name) > 0));
            CREATE TABLE titles(emp_no INTEGER NOT NULL, title TEXT NOT NULL);
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50)
            INSERT INTO employees SELECT x, 'name-' || x FROM c;
            INSERT INTO titles SELECT emp_no, 'Engineer' FROM employees;
            INSERT INTO titles SELECT emp_no, 'Senior Engineer' FROM employees WHERE emp_no % 2 = 1;
            """,
        big: """
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < :count)
            SELECT x AS id, 'employee-' || x AS name FROM c
            """,
        failLate: """
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000)
            SELECT x AS id, CASE WHEN x < 50000 THEN 'ok' ELSE json('not json') END AS v FROM c
            """,
        timeout: "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
        endless: "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x AS id, 'employee-' || x AS name FROM c"
    )

    /// The routes' SQL for `dialect`.
    static func of(_ dialect: SQLDialect) -> TestSQL {
        switch dialect {
        case .postgres: .postgres
        case .sqlite: .sqlite
        }
    }

    static let postgres = TestSQL(
        schema: """
            CREATE TABLE employees(emp_no integer PRIMARY KEY, first_name text NOT NULL CHECK (length(first_name) > 0));
            CREATE TABLE titles(emp_no integer NOT NULL, title text NOT NULL);
            INSERT INTO employees SELECT g, 'name-' || g FROM generate_series(1, 50) g;
            INSERT INTO titles SELECT emp_no, 'Engineer' FROM employees;
            INSERT INTO titles SELECT emp_no, 'Senior Engineer' FROM employees WHERE emp_no % 2 = 1;
            """,
        big: "SELECT g AS id, 'employee-' || g AS name FROM generate_series(1, :count) g",
        failLate: "SELECT g AS id, CASE WHEN g < 50000 THEN 'ok' ELSE (1 / (g - g))::text END AS v FROM generate_series(1, 200000) g",
        timeout: "SELECT pg_sleep(10)",
        endless: """
            SELECT a * 1000000 + b AS id, 'endless-' || b AS name
            FROM generate_series(0, 999999) a CROSS JOIN generate_series(1, 1000000) b
            """
    )
}

/// A server on port 0 (an ``InProcessServer``) with the end-to-end routes over `database`,
/// its log lines kept in ``log``.
final class ServerFixture: Sendable {
    let served: InProcessServer
    let log: LogStore

    var server: HTTPServer { self.served.server }
    var database: Database { self.served.database }
    var port: Int { self.served.port }

    struct Boom: Error {
        var secret = "password=hunter2"
    }

    /// Runs `body` with a server over a fresh SQLite database holding ``TestSQL/sqlite``'s
    /// schema, then stops it (also when `body` throws).
    static func withSQLite(
        _ configuration: ServerConfiguration = ServerConfiguration(host: "127.0.0.1", port: 0),
        database databaseConfiguration: DatabaseConfiguration,
        _ body: (ServerFixture) async throws -> Void
    ) async throws {
        try await self.with(.sqlite, configuration, database: databaseConfiguration) { fixture, _ in try await body(fixture) }
    }

    /// Runs `body` with a server over a fresh database of `dialect` holding its ``TestSQL``
    /// schema, then stops it (also when `body` throws). On PostgreSQL without a test server it
    /// returns at once (under `CI=true` it throws ``TestDatabases/MissingServer`` instead).
    static func with(
        _ dialect: SQLDialect,
        _ configuration: ServerConfiguration = ServerConfiguration(host: "127.0.0.1", port: 0),
        database databaseConfiguration: DatabaseConfiguration,
        _ body: (ServerFixture, TemporaryDatabase) async throws -> Void
    ) async throws {
        guard let temporary = try TestDatabases.make(dialect, prefix: "spout_http") else { return }
        defer { temporary.drop() }
        let database = try temporary.open(databaseConfiguration)
        defer { database.close() }
        let sql = TestSQL.of(dialect)
        try database.withConnection(readOnly: false) { try $0.executeScript(sql.schema) }
        let fixture = try await ServerFixture.start(database: database, sql: sql, configuration: configuration)
        do {
            try await body(fixture, temporary)
        } catch {
            await fixture.stop()
            throw error
        }
        await fixture.stop()
    }

    static func start(
        database: Database, sql: TestSQL, configuration: ServerConfiguration = ServerConfiguration(host: "127.0.0.1", port: 0),
        extraDatabases: [Database] = []
    ) async throws -> ServerFixture {
        let store = LogStore()
        var router = Router()
        Self.addRoutes(to: &router, database: database, sql: sql)
        router.addReadiness(of: [database] + extraDatabases)
        let served = try await InProcessServer.start(
            router: router, database: database, configuration: configuration,
            logger: Logger(label: "spout.http.test", factory: { _ in RecordingLogHandler(store: store) }))
        return ServerFixture(served: served, log: store)
    }

    private init(served: InProcessServer, log: LogStore) {
        self.served = served
        self.log = log
    }

    func stop() async {
        await self.served.stop()
    }

    static func addRoutes(to router: inout Router, database: Database, sql: TestSQL) {
        router.add(.get, "/employees", parameters: [Parameter("limit", .integer, defaultValue: 1000)]) { request in
            if request.hasQueryKey("api") {
                return .text("<html>employees API</html>", contentType: "text/html; charset=utf-8")
            }
            return .rows(
                try database.query(
                    #"SELECT emp_no AS "employeeNumber", first_name AS "firstName" FROM employees ORDER BY emp_no LIMIT :limit"#,
                    request.arguments
                ),
                database: database
            )
        }
        router.add(.get, "/employees/count") { _ in
            .rows(try database.query("SELECT count(*) FROM employees"), database: database, shape: .scalar)
        }
        router.add(
            .get, "/employees/{employeeNumber}",
            parameters: [
                Parameter("employeeNumber", .integer, required: true),
                Parameter("details", .list(.string), allowedValues: ["titles"]),
            ]
        ) { request in
            var stream = try database.query(
                #"SELECT emp_no AS "employeeNumber", first_name AS "firstName" FROM employees WHERE emp_no = :employeeNumber"#,
                request.arguments
            )
            if request.arguments["details"] == .array([.text("titles")]) {
                stream.attach("titles", "SELECT title FROM titles WHERE emp_no = :employeeNumber ORDER BY title")
            }
            return .rows(stream, database: database, shape: .object)
        }
        router.add(
            .post, "/employees",
            parameters: [Parameter("employeeNumber", .integer, required: true), Parameter("firstName", required: true)]
        ) { request in
            guard case .integer(let number) = request.arguments["employeeNumber"] else { throw HTTPError(status: 400, message: "?") }
            var response = Response.rows(
                try database.query(
                    #"INSERT INTO employees(emp_no, first_name) VALUES (:employeeNumber, :firstName) RETURNING emp_no AS "employeeNumber""#,
                    request.arguments
                ),
                database: database, shape: .object, readOnly: false, status: 201
            )
            response.headers.append(HTTPField(name: .location, value: "/employees/\(number)"))
            return response
        }
        router.add(.delete, "/employees/{employeeNumber}", parameters: [Parameter("employeeNumber", .integer, required: true)]) {
            request in
            let arguments = request.arguments
            let changed = try await database.withSession(DatabaseWork(readOnly: false)) { session in
                try await session.run { connection in
                    let parsed = try ParsedSQL("DELETE FROM employees WHERE emp_no = :employeeNumber", dialect: connection.dialect)
                    return try connection.execute(parsed, try parsed.bind(arguments))
                }
            }
            if changed == 0 { throw HTTPError(status: 404, message: "not found") }
            return .noContent()
        }
        router.add(.get, "/big", parameters: [Parameter("count", .integer, defaultValue: 200_000)]) { request in
            .rows(try database.query(sql.big, request.arguments), database: database)
        }
        router.add(.get, "/endless") { _ in
            .rows(try database.query(sql.endless), database: database)
        }
        router.add(.get, "/fail-late") { _ in
            .rows(try database.query(sql.failLate), database: database)
        }
        router.add(.get, "/timeout") { _ in
            .rows(try database.query(sql.timeout), database: database, shape: .scalar, statementTimeout: .milliseconds(100))
        }
        router.add(.get, "/broken-sql") { _ in
            .rows(try database.query("SELECT secret_column FROM no_such_secret_table"), database: database)
        }
        router.add(.get, "/attached") { _ in
            .rows(
                try database.query(#"SELECT emp_no AS "employeeNumber" FROM employees WHERE emp_no <= 2 ORDER BY emp_no"#)
                    .attaching("titles", "SELECT title FROM titles WHERE emp_no = :employeeNumber ORDER BY title"),
                database: database
            )
        }
        router.add(.get, "/boom") { _ in throw Boom() }
        router.add(.get, "/cast", parameters: [Parameter("v")]) { request in
            .rows(try database.query("SELECT CAST(:v AS integer) AS n", request.arguments), database: database, shape: .scalar)
        }
        router.add(.get, "/terminate") { _ in
            // The backend kills itself, then dies at the sleep's interrupt check: mid-query,
            // before any row is sent (reads run outside a transaction on PostgreSQL).
            .rows(
                try database.query("SELECT pg_terminate_backend(pg_backend_pid()) AS killed, pg_sleep(1) AS slept"),
                database: database, shape: .scalar
            )
        }
    }
}

