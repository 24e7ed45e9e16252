import SpoutCore
import SpoutDrivers
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// A write refused by a unique, NOT NULL or CHECK constraint names the parameter whose argument
/// the caller should change, with the same bytes from both databases: SQLite names the columns
/// in its message (a CHECK by its name or expression, found in the table's SQL), PostgreSQL the
/// index or constraint (looked up in its catalog: the message's key is left out under
/// row-level security, see `PetsAPITests`). Where the constraint's columns come from more than
/// one parameter, or from an expression, nothing is named rather than a guess.
@Suite("Constraint violations name the parameter")
struct ConstraintViolationTests {
    static let schema = """
        CREATE TABLE tag (
            owner VARCHAR(20) NOT NULL,
            name  VARCHAR(20) NOT NULL,
            color VARCHAR(20) NOT NULL CHECK (color IN ('red', 'green', 'blue')),
            label VARCHAR(20),
            code  VARCHAR(20) UNIQUE,
            PRIMARY KEY (owner, name),
            CONSTRAINT short_label CHECK (length(label) < 10),
            CHECK (name <> owner)
        );
        CREATE UNIQUE INDEX tag_label ON tag (lower(label));
        CREATE TABLE shelf (name VARCHAR(20) PRIMARY KEY);
        INSERT INTO shelf (name) VALUES ('top');
        CREATE TABLE sticker (
            id       INT PRIMARY KEY,
            tag_code VARCHAR(20) REFERENCES tag (code),
            shelf    VARCHAR(20) REFERENCES shelf
        );
        """

    static let endpoints = """
        paths:
          /tags:
            post:
              description: Creates a tag.
              sql: INSERT INTO tag (owner, name, color, label, code) VALUES (:owner, :name, :color, :label, :code)
              result: none
              parameters:
                - {name: owner, type: string, required: true}
                - {name: name, type: string, required: true}
                - {name: color, type: string}
                - {name: label, type: string}
                - {name: code, type: string}
          /tags/{code}:
            post:
              description: Gives the tag a new code.
              sql: |
                UPDATE tag
                SET code = COALESCE(:newCode, code) -- the new code, when sent
                WHERE code = :code
              result: none
              parameters:
                - {name: newCode, type: string}
          /stickers:
            post:
              description: Sticks a tag's sticker on a shelf.
              sql: INSERT INTO sticker (id, tag_code, shelf) VALUES (:id, :tagCode, :shelf)
              result: none
              parameters:
                - {name: id, type: integer, required: true}
                - {name: tagCode, type: string}
                - {name: shelf, type: string}

        """

    @Test("409 and 422 name the one parameter behind the violated columns, alike on both databases; nothing is stored",
          arguments: SQLDialect.allCases)
    func namedAlike(_ dialect: SQLDialect) async throws {
        guard let database = try TestDatabases.make(dialect, prefix: "spout_rel_constraint") else { return }
        defer { database.drop() }
        try await onThread {
            let connection = try Drivers.driver(for: database.url).connect(readOnly: false, statistics: QueryStatistics())
            defer { connection.close() }
            try connection.executeScript(Self.schema)
        }
        let directory = try ServiceDirectory(databaseURL: database.url, extraEndpoints: ["tags.yaml": Self.endpoints], shipped: false)
        defer { directory.remove() }
        let service = try await InProcessServer.start(directory)
        func post(_ path: String, _ form: String) async throws -> HTTPTestResponse {
            try await RawHTTP.send(
                port: service.port,
                RawHTTP.request("POST", path, headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array(form.utf8)))
        }

        let first = try await post("/tags", "owner=ann&name=home&color=red&label=Blue&code=c1")
        let second = try await post("/tags", "owner=bea&name=work&color=red&code=c2")
        // The key (owner, name) comes from two parameters: which to change is the caller's call.
        let sameKey = try await post("/tags", "owner=ann&name=home&color=green")
        let sameCode = try await post("/tags", "owner=cy&name=x&color=red&code=c1")
        let noColor = try await post("/tags", "owner=cy&name=y")
        // The index is on lower(label): an expression, no column to name.
        let sameLabel = try await post("/tags", "owner=cy&name=z&color=red&label=blue")
        let codeTaken = try await post("/tags/c2", "newCode=c1")
        // CHECKs: a column's own, a named one, and one on two parameters (not named).
        let badColor = try await post("/tags", "owner=cy&name=c&color=purple")
        let longLabel = try await post("/tags", "owner=cy&name=l&color=red&label=abcdefghijkl")
        let sameNames = try await post("/tags", "owner=cy&name=cy&color=red")
        // Foreign keys: to a unique column, to a primary key named by the table alone, NULL.
        let stuck = try await post("/stickers", "id=1&tagCode=c1&shelf=top")
        let noTag = try await post("/stickers", "id=2&tagCode=zz&shelf=top")
        let noShelf = try await post("/stickers", "id=3&tagCode=c2&shelf=bottom")
        let unshelved = try await post("/stickers", "id=4&tagCode=c2")
        await service.stop()
        let stored = try await onThread {
            let connection = try Drivers.driver(for: database.url).connect(readOnly: true, statistics: QueryStatistics())
            defer { connection.close() }
            let result = try connection.queryAll([BoundStatement(try ParsedSQL("SELECT owner, code FROM tag ORDER BY owner", dialect: dialect), [])])
            return result.first?.rows ?? []
        }

        #expect(first.status == 204, "\(first.text)")
        #expect(second.status == 204, "\(second.text)")
        #expect(sameKey.status == 409)
        #expect(sameKey.text == #"{"error":"unique violation"}"#)
        #expect(sameCode.status == 409)
        #expect(sameCode.text == #"{"error":"unique violation","parameter":"code","value":"c1"}"#)
        #expect(noColor.status == 422)
        #expect(noColor.text == #"{"error":"constraint violation","parameter":"color"}"#)
        #expect(sameLabel.status == 409)
        #expect(sameLabel.text == #"{"error":"unique violation"}"#)
        #expect(codeTaken.status == 409)
        #expect(codeTaken.text == #"{"error":"unique violation","parameter":"newCode","value":"c1"}"#)
        #expect(badColor.status == 422)
        #expect(badColor.text == #"{"error":"constraint violation","parameter":"color","value":"purple"}"#)
        #expect(longLabel.status == 422)
        #expect(longLabel.text == #"{"error":"constraint violation","parameter":"label","value":"abcdefghijkl"}"#)
        #expect(sameNames.status == 422)
        #expect(sameNames.text == #"{"error":"constraint violation"}"#)
        #expect(stuck.status == 204, "\(stuck.text)")
        #expect(noTag.status == 422)
        #expect(noTag.text == #"{"error":"constraint violation","parameter":"tagCode","value":"zz"}"#)
        #expect(noShelf.status == 422)
        #expect(noShelf.text == #"{"error":"constraint violation","parameter":"shelf","value":"bottom"}"#)
        #expect(unshelved.status == 204, "\(unshelved.text)")
        #expect(stored == [[.text("ann"), .text("c1")], [.text("bea"), .text("c2")]])
    }
}
