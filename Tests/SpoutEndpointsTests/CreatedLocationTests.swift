import Foundation
import SpoutCore
import SpoutDrivers
import SpoutEndpoints
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// `result: created` with a `location` filled from the row the write returns (a generated
/// key, docs/endpoints.md "Endpoint keys"), through sockets on SQLite and PostgreSQL.
@Suite("Created: Location from the returned row")
struct CreatedLocationTests {
    static let endpointFile = """
        paths:
          /books:
            post:
              sql: INSERT INTO books (title) VALUES (:title) RETURNING id, title
              result: created
              location: /books/{id}
              parameters:
                - {name: title, type: string, required: true}
          /shelves/{shelf}/books:
            post:
              sql: INSERT INTO books (title, shelf) VALUES (:title, :shelf) RETURNING id, shelf
              result: created
              location: /shelves/{shelf}/books/{id}
              parameters:
                - {name: shelf, type: string}
                - {name: title, type: string, required: true}
        """

    @Test("a generated key fills Location; a parameter fills its own placeholder", arguments: SQLDialect.allCases)
    func generatedKey(_ dialect: SQLDialect) async throws {
        guard let database = try TestDatabases.make(dialect, prefix: "spout_t_created") else { return }
        defer { database.drop() }
        let key = dialect == .postgres ? "id SERIAL PRIMARY KEY" : "id INTEGER PRIMARY KEY"
        try await onThread {
            let connection = try Drivers.driver(for: database.url).connect(readOnly: false, statistics: QueryStatistics())
            defer { connection.close() }
            try connection.executeScript("CREATE TABLE books (\(key), title TEXT NOT NULL, shelf TEXT)")
        }
        let directory = try TemporaryDirectory()
        let file = try directory.write("books.yaml", Self.endpointFile)
        let endpoints = try EndpointSet.load(files: [file], sqlDirectory: directory.path, environment: [:])
        let opened = try database.open()
        defer { opened.close() }
        try await InProcessServer.serving(endpoints, database: opened) { server in
            for (number, title) in [(1, "Solaris"), (2, "The Dispossessed")] {
                let created = try await RawHTTP.postJSON(port: server.port, "/books", #"{"title":"\#(title)"}"#)
                #expect(created.status == 201, "\(dialect): \(created.text)")
                #expect(created.header("location") == "/books/\(number)", "\(dialect)")
                #expect(created.text == #"{"id":\#(number),"title":"\#(title)"}"#, "\(dialect): \(created.text)")
            }
            let shelved = try await RawHTTP.postForm(port: server.port, "/shelves/sci%20fi/books", [("title", "Roadside Picnic")])
            #expect(shelved.status == 201, "\(dialect): \(shelved.text)")
            #expect(shelved.header("location") == "/shelves/sci%20fi/books/3", "\(dialect)")
        }
    }

    @Test("a placeholder that is neither a parameter nor a returned column stops the start")
    func unknownPlaceholder() throws {
        let fixture = try EndpointValidationTests.Fixture()
        let named = try fixture.error(Self.endpointFile.replacingOccurrences(of: "location: /books/{id}", with: "location: /books/{bookId}"))
        #expect(named?.line == 6)
        #expect(
            named?.message
                == "'location' uses {bookId}, which is neither a parameter of POST /books nor a column the statement returns (its columns: id, title)")
        let starred = try fixture.error(Self.endpointFile.replacingOccurrences(of: "RETURNING id, title", with: "RETURNING *"))
        #expect(
            starred?.message.hasSuffix("(name the column in the statement's RETURNING list (RETURNING id, or id AS \"bookId\"), not *)") == true)
    }
}
