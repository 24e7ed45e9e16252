import Foundation
import SpoutCore
import SpoutDrivers
@testable import SpoutEndpoints
import SpoutTestDatabases
import SpoutTestSupport
import Testing

/// `spout init --from`: a service made from a database's catalog starts, passes `spout check`
/// and answers lists, pages, objects with details and writes for every table, on the employees
/// database and on a schema written for this test, on both databases, as processes through
/// real sockets.
@Suite("spout init --from a database", .serialized)
struct InitFromDatabaseTests {
    static let secret = "init-tests-secret-0123456789abcdef0123456"

    @Test("every table of the employees database is served", arguments: SQLDialect.allCases)
    func employees(_ dialect: SQLDialect) async throws {
        guard let database = try TestDatabases.make(dialect, prefix: "spout_t_init") else { return }
        defer { database.drop() }
        let load = try await ChildProcess.run(
            executable: try ChildProcess.spoutExecutable(),
            arguments: ["load", TestFixtures.testDB, "--database", database.url, "--sql-directory", Repository.sqlDirectory])
        try #require(load.status == 0, "\(load.standardError)")
        try await Self.exerciseEveryTable(of: database, expectedTables: ["departments", "dept_emp", "dept_manager", "employees", "salaries", "titles"])
    }

    @Test("every table of a schema it has never seen is served", arguments: SQLDialect.allCases)
    func library(_ dialect: SQLDialect) async throws {
        guard let database = try TestDatabases.make(dialect, prefix: "spout_t_init") else { return }
        defer { database.drop() }
        try await onThread {
            let connection = try Drivers.driver(for: database.url).connect(readOnly: false, statistics: QueryStatistics())
            defer { connection.close() }
            try connection.executeScript(Self.librarySchema(dialect))
        }
        try await Self.exerciseEveryTable(of: database, expectedTables: ["author", "book", "loan", "note"])
    }

    @Test("names: camel-case labels, kebab-case paths, reserved parameter names kept apart")
    func names() {
        #expect(ScaffoldNames.label("emp_no") == "empNo")
        #expect(ScaffoldNames.label("First Name") == "firstName")
        #expect(ScaffoldNames.label("HTTPCode") == "httpcode")
        #expect(ScaffoldNames.label("2fa") == "c2fa")
        #expect(ScaffoldNames.label("_") == "value")
        #expect(ScaffoldNames.segment("dept_emp") == "dept-emp")
        #expect(ScaffoldNames.segment("OrderLines") == "order-lines")
        #expect(ScaffoldNames.quoted("say \"hi\"") == "\"say \"\"hi\"\"\"")
        #expect(TableScaffold.parameterName("after") == "afterValue")
        #expect(TableScaffold.parameterName("page_size") == "pageSizeValue")
    }

    // MARK: The walk

    /// Scaffolds a service from `database`, checks it with `spout check`, serves it, and for
    /// each table asks for a page, an object with each of its details, and writes.
    static func exerciseEveryTable(of database: TemporaryDatabase, expectedTables: [String]) async throws {
        let folder = try TemporaryDirectory()
        let spout = try ChildProcess.spoutExecutable()
        let made = try await ChildProcess.run(executable: spout, arguments: ["init", folder.path + "/service", "--from", database.url])
        try #require(made.status == 0, "\(made.standardError)")
        #expect(made.standardOutput.contains("\(expectedTables.count) tables"), "\(made.standardOutput)")
        let config = folder.path + "/service/config/spout.yaml"
        let check = try await ChildProcess.run(executable: spout, arguments: ["check", "--config", config, "--database", database.url])
        #expect(check.status == 0, "\(check.standardOutput)\(check.standardError)")
        // A second init into the same folder replaces nothing.
        let again = try await ChildProcess.run(executable: spout, arguments: ["init", folder.path + "/service", "--from", database.url])
        #expect(again.status != 0 && again.standardError.contains("replaces no file"), "\(again.standardError)")

        let tables = try await onThread {
            let connection = try Drivers.driver(for: database.url).connect(readOnly: true, statistics: QueryStatistics())
            defer { connection.close() }
            return try #require(connection as? any SchemaCatalogReading).schemaTables()
        }
        #expect(tables.map(\.name) == expectedTables)
        let token = try await Self.token()
        let server = try await ServerProcess.start(
            arguments: ["--config", config, "--database", database.url], environment: ["SPOUT_JWT_SECRET": Self.secret])
        do {
            for table in tables {
                try await Self.exercise(table, among: tables, server: server, token: token)
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// One table's walk (see ``exerciseEveryTable(of:expectedTables:)``).
    static func exercise(_ table: CatalogTable, among tables: [CatalogTable], server: ServerProcess, token: String) async throws {
        let path = "/" + ScaffoldNames.segment(table.name)
        let authorization = [("Authorization", "Bearer " + token), ("Content-Type", "application/json")]
        guard !table.primaryKey.isEmpty else {
            // No key: the list and the create only.
            let list = try await server.get(path)
            #expect(list.status == 200, "\(path): \(list.text)")
            let body = Self.object(table.columns.filter { !$0.isFilledByDatabase }.map { ($0.name, "made by the test" as Any) })
            let created = try await Self.send("POST", path, body, headers: authorization, server: server)
            #expect(created.status == 200 && created.text.contains("made by the test"), "\(path): \(created.text)")
            return
        }
        let page = try await server.get(path + "?pageSize=1")
        try #require(page.status == 200, "\(path): \(page.text)")
        let rows = try #require(try page.json() as? [[String: Any]], "\(path): \(page.text)")
        try #require(rows.count == 1, "\(path): \(page.text)")
        #expect(page.header("Link")?.contains("rel=\"next\"") == true, "\(path): a page of 1 of several rows links the next")
        let row = rows[0]
        let objectPath = try Self.objectPath(of: table, row: row)
        let object = try await server.get(objectPath)
        let fetched = try object.json() as? [String: Any] ?? [:]
        #expect(object.status == 200 && Self.canonical(fetched) == Self.canonical(row), "\(objectPath): \(object.text)")

        let children = tables.filter { child in child.foreignKeys.contains { $0.referencedTable == table.name } }
        for child in children {
            let detail = ScaffoldNames.label(child.name)
            let answer = try await server.get(objectPath + "?details=" + detail)
            let member = (try answer.json() as? [String: Any])?[detail]
            #expect(answer.status == 200 && member is [Any], "\(objectPath)?details=\(detail): \(answer.text)")
        }

        // Writes: a table nothing refers to gives its first row back (deleted, then created
        // from its own JSON); one that is referred to gets a new row, changed and deleted.
        if children.isEmpty {
            let deleted = try await Self.send("DELETE", objectPath, nil, headers: authorization, server: server)
            #expect(deleted.status == 204, "DELETE \(objectPath): \(deleted.text)")
            let gone = try await server.get(objectPath)
            #expect(gone.status == 404, "\(objectPath) after DELETE")
            let fields = table.columns.filter { !$0.isGenerated }.map { column in (column.name, row[ScaffoldNames.label(column.name)] ?? NSNull()) }
            let created = try await Self.send("POST", path, Self.object(fields), headers: authorization, server: server)
            #expect(created.status == 201 && created.header("Location") != nil, "POST \(path): \(created.status) \(created.text)")
            let restored = try await server.get(created.header("Location") ?? objectPath)
            let again = try restored.json() as? [String: Any] ?? [:]
            #expect(Self.canonical(again) == Self.canonical(row), "\(objectPath): \(restored.text)")
        } else {
            var fields: [(String, Any)] = []
            for column in table.columns where !column.isGenerated {
                let label = ScaffoldNames.label(column.name)
                if table.primaryKey.contains(column.name) {
                    if column.isFilledByDatabase { continue }
                    fields.append((column.name, try Self.newKey(row[label], column: column)))
                } else if !column.isNotNull {
                    fields.append((column.name, NSNull()))
                } else if table.indexes.contains([column.name]), row[label] is String {
                    // Perhaps unique (departments' names): a value no row has.
                    fields.append((column.name, try Self.newKey(row[label], column: column)))
                } else {
                    fields.append((column.name, row[label] ?? NSNull()))
                }
            }
            let created = try await Self.send("POST", path, Self.object(fields), headers: authorization, server: server)
            try #require(created.status == 201, "POST \(path): \(created.text)")
            let location = try #require(created.header("Location"), "POST \(path): no Location")
            let made = try await server.get(location)
            #expect(made.status == 200, "\(location): \(made.text)")
            if let changeable = table.columns.first(where: { !table.primaryKey.contains($0.name) && !$0.isGenerated && $0.isNotNull }) {
                let label = ScaffoldNames.label(changeable.name)
                let value = (try created.json() as? [String: Any])?[label] ?? NSNull()
                let changed = try await Self.send("POST", location, Self.object([(changeable.name, value)]), headers: authorization, server: server)
                #expect(changed.status == 200, "POST \(location): \(changed.text)")
            }
            let deleted = try await Self.send("DELETE", location, nil, headers: authorization, server: server)
            #expect(deleted.status == 204, "DELETE \(location): \(deleted.text)")
        }
        let anonymous = try await Self.send("DELETE", objectPath, nil, headers: [], server: server)
        #expect(anonymous.status == 401, "DELETE \(objectPath) without a token: \(anonymous.status)")
    }

    // MARK: Helpers

    /// `object` as JSON text with sorted keys: equal texts, equal objects.
    static func canonical(_ object: [String: Any]) -> String {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// `/segment/{key}...` of `row`, each key value percent-encoded as text.
    static func objectPath(of table: CatalogTable, row: [String: Any]) throws -> String {
        var path = "/" + ScaffoldNames.segment(table.name)
        for name in table.primaryKey {
            let value = try #require(row[ScaffoldNames.label(name)], "\(table.name): no \(name) in \(row)")
            let text = "\(value)"
            path += "/" + (text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text)
        }
        return path
    }

    /// A key value no row of the fixtures has, of the same type and length as `value`.
    static func newKey(_ value: Any?, column: CatalogColumn) throws -> Any {
        switch value {
        case let number as Int: return number + 900_000
        case let text as String: return "z" + text.dropFirst()
        default: throw KeyNotMade(column: column.name)
        }
    }

    struct KeyNotMade: Error { var column: String }

    /// A JSON object of `fields` (column names) under their parameters' names.
    static func object(_ fields: [(String, Any)]) -> [String: Any] {
        Dictionary(fields.map { (TableScaffold.parameterName($0.0), $0.1) }, uniquingKeysWith: { first, _ in first })
    }

    static func send(_ method: String, _ target: String, _ body: [String: Any]?, headers: [(String, String)], server: ServerProcess) async throws
        -> HTTPTestResponse
    {
        let bytes = try body.map { Array(try JSONSerialization.data(withJSONObject: $0)) } ?? []
        let request = RawHTTP.request(method, target, headers: headers, body: bytes)
        let port = server.port
        let answer = try await onThread { try RawHTTP.exchange(port: port, request) }
        return try #require(answer, "\(method) \(target): no answer")
    }

    static func token() async throws -> String {
        let made = try await ChildProcess.run(
            executable: try ChildProcess.spoutExecutable(), arguments: ["token", "--sub", "librarian"],
            environment: ["SPOUT_JWT_SECRET": Self.secret, "PATH": "/usr/bin:/bin"])
        try #require(made.status == 0, "\(made.standardError)")
        return made.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A lending library: generated keys, a composite key, a reserved column name, a table
    /// without a key, and foreign keys to follow.
    static func librarySchema(_ dialect: SQLDialect) -> String {
        let generated = dialect == .postgres ? "integer GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY" : "INTEGER PRIMARY KEY"
        let boolean = dialect == .postgres ? "boolean NOT NULL DEFAULT false" : "BOOLEAN NOT NULL DEFAULT 0"
        return """
            CREATE TABLE author (id \(generated), name VARCHAR(100) NOT NULL, born DATE);
            CREATE TABLE book (
                id \(generated), author_id INTEGER NOT NULL REFERENCES author (id), title TEXT NOT NULL,
                isbn VARCHAR(13) UNIQUE, "after" TEXT, published DATE, price NUMERIC(8, 2));
            CREATE INDEX book_author ON book (author_id);
            CREATE TABLE loan (
                book_id INTEGER NOT NULL REFERENCES book (id), borrower VARCHAR(50) NOT NULL, due DATE NOT NULL,
                returned \(boolean), PRIMARY KEY (book_id, borrower));
            CREATE TABLE note (body TEXT);
            INSERT INTO author (name, born) VALUES ('Ursula K. Le Guin', '1929-10-21'), ('Italo Calvino', '1923-10-15');
            INSERT INTO book (author_id, title, isbn, "after", published, price) VALUES
                (1, 'The Dispossessed', '9780060512750', 'The Left Hand of Darkness', '1974-05-01', 9.99),
                (1, 'The Lathe of Heaven', NULL, NULL, '1971-01-01', NULL),
                (2, 'Invisible Cities', '9780156453806', NULL, '1972-11-01', 12.50);
            INSERT INTO loan (book_id, borrower, due) VALUES (1, 'Gwen', '2026-12-01'), (3, 'Diane', '2026-12-15');
            INSERT INTO note (body) VALUES ('The library opens at nine.');
            """
    }
}
