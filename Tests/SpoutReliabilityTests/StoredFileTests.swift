import Foundation
import SpoutCore
import SpoutDrivers
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// `result: bytes`: a stored file (a `bytea` or BLOB column, or text) served as it is, with the
/// endpoint's media type: the bytes an app's image loader gets, the same from both databases,
/// validated by a strong `ETag` (304), never compressed again unless it is text, 404 for no row
/// or a NULL, 406 for an `Accept` that excludes its type.
@Suite("Stored files: result bytes")
struct StoredFileTests {
    static let schema: [SQLDialect: String] = [
        .postgres: "CREATE TABLE file (name TEXT PRIMARY KEY, body BYTEA, note TEXT);",
        .sqlite: "CREATE TABLE file (name TEXT PRIMARY KEY, body BLOB, note TEXT);",
    ]

    static let endpoints = """
        paths:
          /files/{name}:
            get:
              description: A stored image.
              sql: SELECT body FROM file WHERE name = :name
              result: bytes
              mediaType: image/png
              cache: {maxAge: 60}
          /notes/{name}:
            get:
              description: A stored text.
              sql: SELECT note FROM file WHERE name = :name
              result: bytes
              mediaType: "text/plain; charset=utf-8"

        """

    /// Every byte value four times: what a text path would mangle (NUL, invalid UTF-8, CR LF).
    static let image: [UInt8] = Array(repeating: Array(0...255), count: 4).flatMap { $0 }
    static let note = String(repeating: "Grüße, Ünïcödé — ", count: 20)

    @Test("the bytes as stored, with the media type, an ETag and 304; 404, 406; text compressed, images not",
          arguments: SQLDialect.allCases)
    func served(_ dialect: SQLDialect) async throws {
        guard let database = try TestDatabases.make(dialect, prefix: "spout_rel_files") else { return }
        defer { database.drop() }
        try await onThread {
            let connection = try Drivers.driver(for: database.url).connect(readOnly: false, statistics: QueryStatistics())
            defer { connection.close() }
            try connection.executeScript(Self.schema[dialect]!)
            let insert = try ParsedSQL("INSERT INTO file (name, body, note) VALUES (:name, :body, :note)", dialect: dialect)
            for (name, body, note) in [("all", SQLValue.bytes(Self.image), SQLValue.text(Self.note)), ("null", .null, .null)] {
                try connection.execute(insert, try insert.bind(["name": .text(name), "body": body, "note": note]))
            }
        }
        let directory = try ServiceDirectory(databaseURL: database.url, extraEndpoints: ["files.yaml": Self.endpoints], shipped: false)
        defer { directory.remove() }
        let service = try await InProcessServer.start(directory)

        let image = try await service.get("/files/all", headers: [("Accept-Encoding", "zstd, gzip")], accept: "image/avif,image/webp,*/*;q=0.8")
        let tag = image.header("ETag") ?? ""
        let revalidated = try await service.get("/files/all", headers: [("If-None-Match", tag)])
        let imageRange = try await service.get("/files/all", accept: "image/*")
        let missing = try await service.get("/files/none")
        let null = try await service.get("/files/null")
        let json = try await service.get("/files/all", accept: "application/json")
        let note = try await service.get("/notes/all")
        let compressed = try await service.get("/notes/all", headers: [("Accept-Encoding", "gzip")])
        let document = try await service.get("/openapi.json")
        await service.stop()

        #expect(image.status == 200)
        #expect(image.body == Self.image)
        #expect(image.header("Content-Type") == "image/png")
        #expect(image.header("Content-Encoding") == nil)
        #expect(image.header("Cache-Control") == "private, max-age=60")
        #expect(tag.hasPrefix("\"") && !tag.hasPrefix("W/"), "\(tag)")
        #expect(revalidated.status == 304)
        #expect(revalidated.body.isEmpty)
        #expect(imageRange.status == 200 && imageRange.body == Self.image)
        #expect(missing.status == 404)
        #expect(null.status == 404)
        #expect(json.status == 406)
        #expect(json.text == #"{"error":"not acceptable: this resource is image/png"}"#)
        #expect(note.status == 200)
        #expect(note.header("Content-Type") == "text/plain; charset=utf-8")
        #expect(note.text == Self.note)
        #expect(compressed.header("Content-Encoding") == "gzip")
        let paths = (try JSONSerialization.jsonObject(with: Data(document.body)) as? [String: Any])?["paths"] as? [String: Any]
        let ok = ((paths?["/files/{name}"] as? [String: Any])?["get"] as? [String: Any]).flatMap { ($0["responses"] as? [String: Any])?["200"] as? [String: Any] }
        let schema = ((ok?["content"] as? [String: Any])?["image/png"] as? [String: Any])?["schema"] as? [String: String]
        #expect(schema == ["type": "string", "format": "binary"], "\(String(describing: ok))")
    }
}
