import Foundation
import Logging
import SpoutCore
import SpoutDrivers
import SpoutTestDatabases
import SpoutTestSupport
import SpoutTestServer
import Testing

/// PostgreSQL databases whose encoding is not UTF-8, as older installations have them. Spout
/// talks UTF-8 to every database (client_encoding), so PostgreSQL converts both ways: a
/// `LATIN1` database reads and writes as any other, a character it cannot hold is the caller's
/// 400 (not a 500), and text a `SQL_ASCII` database holds in no encoding at all is the
/// server's 500 (not a 400 blaming a caller who sent nothing). SQLite keeps any UTF-8 text,
/// so none of this happens there.
@Suite("Databases in other encodings", .serialized)
struct DatabaseEncodingTests {
    static let endpoints = """
        paths:
          /names:
            get:
              description: Every name.
              sql: SELECT name FROM person ORDER BY name
            post:
              description: Adds a name.
              sql: INSERT INTO person (name) VALUES (:name)
              result: none
              parameters:
                - {name: name, type: string, required: true}
          /names/find:
            get:
              description: The names equal to name.
              sql: SELECT name FROM person WHERE name = :name
              parameters:
                - {name: name, type: string, required: true}

        """

    /// A database of `encoding` with a `person` table holding `rows` (SQL literals).
    private func withService(
        encoding: String, rows: [String], _ body: (InProcessServer, LogStore) async throws -> Void
    ) async throws {
        let database = try TestDatabases.makePostgresDatabase(
            prefix: "spout_rel_encoding", options: "ENCODING '\(encoding)' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
        defer { database.drop() }
        try await onThread {
            let connection = try Drivers.driver(for: database.url).connect(readOnly: false, statistics: QueryStatistics())
            defer { connection.close() }
            try connection.executeScript(
                "CREATE TABLE person (name text NOT NULL); INSERT INTO person (name) VALUES \(rows.map { "(\($0))" }.joined(separator: ", "))")
        }
        let directory = try ServiceDirectory(databaseURL: database.url, extraEndpoints: ["names.yaml": Self.endpoints], shipped: false)
        defer { directory.remove() }
        let log = LogStore()
        let service = try await InProcessServer.start(directory, logger: Logger(label: "spout.test") { _ in RecordingLogHandler(store: log) })
        try await body(service, log)
        await service.stop()
    }

    @Test("a LATIN1 database reads and writes UTF-8 JSON; a character it cannot hold is a 400 that stores nothing",
          .enabled(if: TestDatabases.postgresEnabled))
    func latin1() async throws {
        try await self.withService(encoding: "LATIN1", rows: ["'café'", "'Müller'"]) { service, _ in
            let names = try await service.get("/names")
            #expect(names.status == 200 && names.text == #"[{"name":"Müller"},{"name":"café"}]"#, "\(names.status) \(names.text)")
            let found = try await service.get("/names/find?name=caf%C3%A9")
            #expect(found.text == #"[{"name":"café"}]"#, "\(found.text)")
            let written = try await RawHTTP.postForm(port: service.port, "/names", [("name", "Ångström")])
            #expect(written.status == 204, "\(written.status) \(written.text)")

            let euro = try await service.get("/names/find?name=%E2%82%AC")
            #expect(euro.status == 400, "\(euro.status) \(euro.text)")
            #expect(
                euro.text == #"{"error":"text not representable in the database's encoding","parameter":"name","value":"€"}"#, "\(euro.text)")
            let refused = try await RawHTTP.postForm(port: service.port, "/names", [("name", "5 €")])
            #expect(refused.status == 400, "\(refused.status) \(refused.text)")
            #expect(refused.text.contains(#""parameter":"name","value":"5 €""#), "\(refused.text)")
            #expect(try await service.get("/names").text == #"[{"name":"Müller"},{"name":"café"},{"name":"Ångström"}]"#)
        }
    }

    @Test("a SQL_ASCII database holding bytes that are not UTF-8: reading them is a 500 (logged), not the caller's 400",
          .enabled(if: TestDatabases.postgresEnabled))
    func sqlASCII() async throws {
        // E'caf\xe9': Latin-1's é as a byte, which SQL_ASCII keeps as it is.
        try await self.withService(encoding: "SQL_ASCII", rows: [#"E'caf\xe9'"#, "'plain'"]) { service, log in
            let names = try await service.get("/names")
            #expect(names.status == 500 && names.text == #"{"error":"internal server error"}"#, "\(names.status) \(names.text)")
            let logged = log.all.contains { "\($0.metadata)".contains("invalid byte sequence") }
            #expect(logged, "\(log.all.map(\.message))")
            // The rows that are UTF-8 still read.
            let plain = try await service.get("/names/find?name=plain")
            #expect(plain.status == 200 && plain.text == #"[{"name":"plain"}]"#, "\(plain.status) \(plain.text)")
        }
    }
}
