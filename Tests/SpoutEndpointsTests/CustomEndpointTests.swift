import Foundation
import SpoutCore
import SpoutDrivers
import SpoutEndpoints
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

@Suite("A user's own endpoint")
struct CustomEndpointTests {
    @Test("an endpoint added as YAML and an SQL file is served with no Swift")
    func newEndpoint() async throws {
        let database = TestDatabases.makeSQLiteDatabase()
        defer { database.drop() }
        try await onThread {
            let connection = try Drivers.driver(for: database.url).connect(readOnly: false, statistics: QueryStatistics())
            defer { connection.close() }
            try connection.executeScript("""
                CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL, published DATE, author_id INTEGER);
                CREATE TABLE authors (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
                INSERT INTO authors VALUES (1, 'Ursula K. Le Guin'), (2, 'Stanisław Lem');
                INSERT INTO books VALUES (1, 'The Dispossessed', '1974-05-01', 1), (2, 'Solaris', '1961-01-01', 2),
                    (3, 'The Left Hand of Darkness', '1969-03-01', 1);
                """)
        }
        let service = try TemporaryDirectory()
        try service.write("config/spout.yaml", "database:\n  url: \(database.url)\nendpoints: [api/*.yaml]\nsqlDirectory: ../queries\n")
        try service.write("config/api/library.yaml", """
            description: A small library.
            paths:
              /authors/{authorId}/books:
                get:
                  description: The books of an author, oldest first.
                  sqlFile: library/books-of-author.sql
                  parameters:
                    - name: authorId
                      type: integer
                    - name: publishedAfter
                      type: date
                      default: 1900-01-01
                  details:
                    - name: author
                      sql: SELECT name FROM authors WHERE id = :authorRef
                  rowLimit: 10
              /books/count:
                get:
                  sql: SELECT count(*) AS n FROM books
                  result: scalar
            """)
        try service.write("queries/library/books-of-author.sql", """
            SELECT id, title, published, author_id AS "authorRef"
            FROM books
            WHERE author_id = :authorId AND published > :publishedAfter
            ORDER BY published
            """)
        let configuration = try SpoutConfiguration.load(
            file: (service.path as NSString).appendingPathComponent("config/spout.yaml"), environment: [:])
        let endpoints = try EndpointSet.load(configuration: configuration, environment: [:])
        let opened = try Drivers.open(configuration.database.url, configuration: configuration.databaseConfiguration)
        defer { opened.close() }
        let server = try await InProcessServer.start(endpoints, database: opened)

        let books = try await server.get("/authors/1/books?details=author")
        #expect(books.status == 200)
        #expect(books.header("content-type") == "application/json")
        #expect(books.text == #"[{"id":3,"title":"The Left Hand of Darkness","published":-26438400000,"authorRef":1,"author":[{"name":"Ursula K. Le Guin"}]},{"id":1,"title":"The Dispossessed","published":136598400000,"authorRef":1,"author":[{"name":"Ursula K. Le Guin"}]}]"#)
        let after = try await server.get("/authors/1/books?publishedAfter=1970-01-01")
        #expect(after.text == #"[{"id":1,"title":"The Dispossessed","published":136598400000,"authorRef":1}]"#)
        let count = try await server.get("/books/count")
        #expect(count.text == "3")
        let bad = try await server.get("/authors/x/books")
        #expect(bad.status == 400)
        #expect(bad.text == #"{"error":"invalid integer","parameter":"authorId","value":"x"}"#)
        let unknownDetail = try await server.get("/authors/1/books?details=publisher")
        #expect(unknownDetail.status == 400)
        #expect(unknownDetail.text == #"{"error":"value not allowed","parameter":"details","value":"publisher","allowed":["author"]}"#)
        let docs = try await server.get("/authors?api")
        #expect(docs.status == 200)
        #expect(docs.header("content-type") == "text/html; charset=utf-8")
        #expect(docs.text.contains("<h2>/authors/{authorId}/books</h2>"))
        #expect(docs.text.contains("The books of an author, oldest first."))
        #expect(docs.text.contains("<code>publishedAfter</code></td><td class=\"type\">date</td><td>no</td><td><code>&quot;1900-01-01&quot;</code>"))
        #expect(!docs.text.contains("/books/count"))
        let all = try await server.get("/?api")
        #expect(all.text.contains("<h2>/books/count</h2>"))
        #expect(all.text.contains("<h2>/authors/{authorId}/books</h2>"))
        let root = try await server.get("/")
        #expect(root.status == 404)
        await server.stop()
    }
}
