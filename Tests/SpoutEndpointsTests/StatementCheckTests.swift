import Foundation
import SpoutCore
import SpoutTestSupport
import Testing

/// Every statement of every endpoint is prepared against the database at start, without
/// running it (docs/endpoints.md, "Checked at startup"): `spout serve` stops at those the
/// database refuses, with their file, line and the database's message, and `spout check` says
/// the same for CI; a database that cannot be reached stops neither the start nor, silently,
/// the check. On both databases, through real `spout` processes.
@Suite("SQL checked at start")
struct StatementCheckTests {
    /// Endpoints whose SQL parses but does not prepare, one mistake of each kind and place: a
    /// stray `)` on line 2 of an SQL file, `SELEC` inline (with details, which must not be
    /// blamed), a versionSql's table, a detail's detail's table, and a page key that is no
    /// column (which the endpoint file cannot tell from `SELECT *`).
    static let brokenEndpoints = """
        paths:
          /books:
            get:
              sqlFile: books.sql
          /authors:
            get:
              sql: SELEC id, name FROM authors
              details:
                - name: books
                  sql: SELECT id FROM books WHERE author_id = :id
          /authors/{id}:
            get:
              sql: SELECT id, name FROM authors WHERE id = :id
              parameters: {id: {type: integer}}
              result: object
              versionSql: SELECT count(*) FROM authorz
              details:
                - name: books
                  sql: SELECT id AS "bookId", title FROM books WHERE author_id = :id
                  details:
                    - name: loans
                      sql: SELECT * FROM loanz WHERE book_id = :bookId
          /pages:
            get:
              sql: SELECT * FROM books ORDER BY id
              page: {key: [ident]}
        """
    static let brokenSQL = ["books.sql": "SELECT id, title\nFROM books WHERE id > 0)\n"]

    /// The problems `brokenEndpoints` has on `dialect`, each the end of a path, a line and a
    /// message (`file:line: message`).
    static func problems(_ dialect: SQLDialect) -> [String] {
        let name = LibraryService.name(dialect)
        let postgres = dialect == .postgres
        return [
            "/queries/books.sql:2: the SQL of GET /books does not prepare on \(name): "
                + (postgres ? #"syntax error at or near ")""# : #"near ")": syntax error"#),
            "/config/api/library.yaml:7: the SQL of GET /authors does not prepare on \(name): "
                + (postgres ? #"syntax error at or near "SELEC""# : #"near "SELEC": syntax error"#),
            "/config/api/library.yaml:16: versionSql of GET /authors/{id} does not prepare on \(name): "
                + (postgres ? #"relation "authorz" does not exist"# : "no such table: authorz"),
            "/config/api/library.yaml:22: detail 'books.loans' of GET /authors/{id} does not prepare on \(name): "
                + (postgres ? #"relation "loanz" does not exist"# : "no such table: loanz"),
            "/config/api/library.yaml:24: page key column 'ident' of GET /pages is not a column of its result on \(name) "
                + "(its columns: id, title, author_id)",
        ]
    }

    /// Endpoints that prepare on both databases, including what a check could wrongly refuse:
    /// a detail selecting its parent's key (`:name` alone has no type on PostgreSQL until it
    /// is typed like the parent's column, as child queries type it), an optional filter, pages
    /// and a versionSql.
    static let goodEndpoints = """
        paths:
          /authors:
            get:
              sql: SELECT id, name FROM authors WHERE (:name IS NULL OR name = :name) ORDER BY id
              parameters: {name: {}}
              page: {key: [id]}
              versionSql: SELECT count(*) FROM authors
              details:
                - name: books
                  sql: SELECT :name AS "authorName", id AS "bookId", title FROM books WHERE author_id = :id ORDER BY id
                  details:
                    - name: same
                      sql: SELECT title FROM books WHERE id = :bookId
        """

    /// Runs `spout ARGUMENTS` without the test process's `SPOUT_*` variables.
    static func spout(_ arguments: [String]) async throws -> ChildProcess.Result {
        try await ChildProcess.run(
            executable: try ChildProcess.spoutExecutable(), arguments: arguments, environment: ChildProcess.inheritedEnvironment)
    }

    @Test("spout serve stops at every statement the database does not prepare, with its file, line and message", arguments: SQLDialect.allCases)
    func serveStopsAtStatementsThatDoNotPrepare(_ dialect: SQLDialect) async throws {
        guard let database = try await LibraryService.database(dialect) else { return }
        defer { database.drop() }
        let service = try LibraryService.folder(url: database.url, endpoints: Self.brokenEndpoints, sqlFiles: Self.brokenSQL)
        do {
            let server = try await ServerProcess.start(arguments: ["--config", LibraryService.configFile(service)])
            let log = server.log
            await server.stop()
            Issue.record("spout serve started with SQL that does not prepare:\n\(log)")
        } catch let failure as RawSocket.Failure {
            let output = failure.description
            // 78 (EX_CONFIG) in a wait status.
            #expect(output.contains("exited before listening (status \(78 << 8))"), "\(output)")
            let lines = output.split(separator: "\n").map(String.init)
            for problem in Self.problems(dialect) {
                #expect(lines.contains { $0.hasPrefix(service.path) && $0.hasSuffix(problem) }, "\(problem)\n\(output)")
            }
            #expect(!output.contains("neither a parameter"), "\(output)")
        }
    }

    @Test("spout check prints each problem as file:line: message and exits 78, or 0 when every statement prepares", arguments: SQLDialect.allCases)
    func checkReportsProblems(_ dialect: SQLDialect) async throws {
        guard let database = try await LibraryService.database(dialect) else { return }
        defer { database.drop() }
        let broken = try LibraryService.folder(url: database.url, endpoints: Self.brokenEndpoints, sqlFiles: Self.brokenSQL)
        let refused = try await Self.spout(["check", "--config", LibraryService.configFile(broken)])
        #expect(refused.status == 78, "\(refused.standardError)")
        let lines = refused.standardOutput.split(separator: "\n").map(String.init)
        let expected = Self.problems(dialect)
        #expect(lines.count == expected.count, "\(refused.standardOutput)")
        for (line, problem) in zip(lines, expected) {
            #expect(line == broken.path + problem)
        }

        let good = try LibraryService.folder(url: database.url, endpoints: Self.goodEndpoints)
        let passed = try await Self.spout(["check", "--config", LibraryService.configFile(good)])
        #expect(passed.status == 0, "\(passed.standardOutput)\(passed.standardError)")
        #expect(passed.standardOutput == "1 endpoint: every statement prepares\n", "\(passed.standardOutput)")
        // What the check passed, the server serves.
        let server = try await ServerProcess.start(arguments: ["--config", LibraryService.configFile(good)])
        let authors = try await server.get("/authors?name=Stanislaw%20Lem&details=books&details=books.same")
        await server.stop()
        #expect(
            authors.text == #"[{"id":2,"name":"Stanislaw Lem","books":[{"authorName":"Stanislaw Lem","bookId":2,"title":"Solaris","same":[{"title":"Solaris"}]}]}]"#,
            "\(authors.status) \(authors.text)")
    }

    /// A database that cannot be reached: PostgreSQL on a port nothing listens on; SQLite a
    /// file that does not exist (and is not created: no seeding).
    static func unreachableURL(_ dialect: SQLDialect, in directory: TemporaryDirectory) -> String {
        switch dialect {
        case .postgres: return "postgresql://127.0.0.1:1/spout_absent?connect_timeout=2"
        case .sqlite: return "sqlite:" + (directory.path as NSString).appendingPathComponent("absent/none.sqlite")
        }
    }

    @Test("a database that cannot be reached does not stop the start, and spout check exits 69", arguments: SQLDialect.allCases)
    func unreachableDatabase(_ dialect: SQLDialect) async throws {
        let directory = try TemporaryDirectory()
        let url = Self.unreachableURL(dialect, in: directory)
        let service = try LibraryService.folder(url: url, endpoints: Self.brokenEndpoints, sqlFiles: Self.brokenSQL)
        let server = try await ServerProcess.start(arguments: ["--config", LibraryService.configFile(service), "--no-seed"])
        let log = server.log
        await server.stop()
        #expect(log.contains("the endpoints' SQL is not checked"), "\(log)")

        let check = try await Self.spout(["check", "--config", LibraryService.configFile(service)])
        #expect(check.status == 69, "\(check.status) \(check.standardOutput)\(check.standardError)")
        #expect(check.standardError.contains("cannot be reached, so the SQL was not checked"), "\(check.standardError)")
        #expect(check.standardOutput.isEmpty)
        if dialect == .sqlite {
            #expect(!FileManager.default.fileExists(atPath: String(url.dropFirst("sqlite:".count))))
        }
    }
}
