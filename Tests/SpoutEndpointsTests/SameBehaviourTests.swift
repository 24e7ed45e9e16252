import Foundation
import SpoutCore
import SpoutTestSupport
import Testing

/// The same endpoint file behaves alike on PostgreSQL and SQLite where the two once differed:
/// a write that returns rows answers them (PostgreSQL once declared a cursor for it, which it
/// refuses for `INSERT`), and a list parameter alone in `IN (...)`, which SQLite answered with
/// `[]` and PostgreSQL refused, is refused at start on both, while the forms docs/endpoints.md
/// gives ("List parameters") answer alike. Through real `spout` processes.
@Suite("One behaviour on both databases")
struct SameBehaviourTests {
    static let writeEndpoints = """
        paths:
          /books:
            post:
              sql: INSERT INTO books (id, title, author_id) VALUES (:id, :title, :authorId) RETURNING id, title, author_id AS "authorId"
              parameters:
                id: {type: integer, required: true}
                title: {required: true}
                authorId: {type: integer, required: true}
              details:
                - name: author
                  sql: SELECT name FROM authors WHERE id = :authorId
          /books/{id}:
            get:
              sql: SELECT id, title FROM books WHERE id = :id
              parameters: {id: {type: integer}}
              result: object
        """

    @Test("a write with result rows answers the rows it returns, details included", arguments: SQLDialect.allCases)
    func writeReturningRows(_ dialect: SQLDialect) async throws {
        guard let database = try await LibraryService.database(dialect) else { return }
        defer { database.drop() }
        let service = try LibraryService.folder(url: database.url, endpoints: Self.writeEndpoints)
        let server = try await ServerProcess.start(arguments: ["--config", LibraryService.configFile(service)])
        do {
            let written = try await RawHTTP.postJSON(
                port: server.port, "/books", #"{"id":10,"title":"Dune","authorId":2,"details":["author"]}"#)
            #expect(written.status == 200, "\(written.status) \(written.text)\n\(server.log)")
            #expect(written.text == #"[{"id":10,"title":"Dune","authorId":2,"author":[{"name":"Stanislaw Lem"}]}]"#)
            let read = try await server.get("/books/10")
            #expect(read.text == #"{"id":10,"title":"Dune"}"#, "\(read.status) \(read.text)")
            // A refused write answers its error and leaves nothing behind.
            let again = try await RawHTTP.postJSON(port: server.port, "/books", #"{"id":10,"title":"Dune again","authorId":2}"#)
            #expect(again.status == 409, "\(again.status) \(again.text)")
            let unchanged = try await server.get("/books/10")
            #expect(unchanged.text == #"{"id":10,"title":"Dune"}"#)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test("IN (:list) is refused at start with the forms to write, and those forms answer alike", arguments: SQLDialect.allCases)
    func listParameters(_ dialect: SQLDialect) async throws {
        guard let database = try await LibraryService.database(dialect) else { return }
        defer { database.drop() }
        let refusedService = try LibraryService.folder(
            url: database.url,
            endpoints: """
                paths:
                  /books:
                    get:
                      sql: |
                        SELECT id, title FROM books
                        WHERE id NOT IN ( :ids ) ORDER BY id
                      parameters: {ids: {type: list of integer}}
                """)
        do {
            let server = try await ServerProcess.start(arguments: ["--config", LibraryService.configFile(refusedService)])
            let answer = try await server.get("/books?ids=1&ids=3")
            await server.stop()
            Issue.record("IN (:ids) was served: \(answer.status) \(answer.text)")
        } catch let failure as RawSocket.Failure {
            let output = failure.description
            #expect(output.contains("exited before listening (status \(78 << 8))"), "\(output)")
            #expect(
                output.contains(
                    refusedService.path + "/config/api/library.yaml:6: parameter :ids is a list, which is bound as one value: "
                        + "IN (:ids) compares each row with the whole list"),
                "\(output)")
            #expect(output.contains("= ANY(:ids) on PostgreSQL, IN (SELECT value FROM json_each(:ids)) on SQLite"), "\(output)")
        }

        let service = try LibraryService.folder(
            url: database.url,
            endpoints: """
                paths:
                  /books:
                    get:
                      sqlFile: books-by-ids.sql
                      parameters: {ids: {type: list of integer}}
                """,
            sqlFiles: [
                "books-by-ids.sql": "SELECT id, title FROM books WHERE id IN (SELECT value FROM json_each(:ids)) ORDER BY id\n",
                "postgres/books-by-ids.sql": "SELECT id, title FROM books WHERE id = ANY(:ids) ORDER BY id\n",
            ])
        let server = try await ServerProcess.start(arguments: ["--config", LibraryService.configFile(service)])
        do {
            let two = try await server.get("/books?ids=1&ids=3")
            #expect(two.text == #"[{"id":1,"title":"The Dispossessed"},{"id":3,"title":"The Left Hand of Darkness"}]"#, "\(two.status) \(two.text)")
            let none = try await server.get("/books")
            #expect(none.text == "[]", "\(none.status) \(none.text)")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
