import Foundation
import SpoutCore
import SpoutDrivers
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Uploads: a `bytes` parameter takes a file as the request body (`body:`), as a multipart
/// part, or as Base64 in JSON, and stores exactly those bytes in a `bytea` or BLOB column, from
/// which `result: bytes` serves them back; a body of another media type is a 415 and a value
/// that is not Base64 a 400, each naming the parameter, with nothing stored.
@Suite("Uploads: bytes parameters")
struct UploadTests {
    static let schema: [SQLDialect: String] = [
        .postgres: "CREATE TABLE photo (name TEXT PRIMARY KEY, image BYTEA NOT NULL, caption TEXT, media_type TEXT);",
        .sqlite: "CREATE TABLE photo (name TEXT PRIMARY KEY, image BLOB NOT NULL, caption TEXT, media_type TEXT);",
    ]

    static let endpoints = """
        paths:
          /photos/{name}:
            put:
              description: Stores the photo sent as the request body.
              sql: |
                INSERT INTO photo (name, image) VALUES (:name, :image)
                ON CONFLICT (name) DO UPDATE SET image = excluded.image
              body: image
              mediaType: image/*
              result: none
              parameters:
                image: {type: bytes, required: true, description: The photo.}
            get:
              description: The photo.
              sql: SELECT image FROM photo WHERE name = :name
              result: bytes
              mediaType: image/png
          /large/{name}:
            put:
              description: Photos up to 3 MB, beyond the server's 1 MiB.
              sql: INSERT INTO photo (name, image) VALUES (:name, :image)
              body: image
              maxBodyBytes: 3000000
              result: none
              parameters:
                image: {type: bytes, required: true}
          /small/{name}:
            put:
              description: Thumbnails of at most 10 bytes.
              sql: INSERT INTO photo (name, image) VALUES (:name, :image)
              body: image
              maxBodyBytes: 10
              result: none
              parameters:
                image: {type: bytes, required: true}
          /measure:
            put:
              description: "The length of the body, where the SQL leaves the parameter's type open."
              sql: SELECT length(:image) AS "size"
              body: image
              result: object
              parameters:
                image: {type: bytes, required: true}
          /photos/{name}/caption:
            get:
              sql: SELECT caption FROM photo WHERE name = :name
              result: scalar
          /photos:
            post:
              description: A photo with its caption, from a form or JSON.
              sql: INSERT INTO photo (name, image, caption) VALUES (:name, :image, :caption)
              result: none
              parameters:
                name: {required: true}
                image: {type: bytes, required: true}
                caption:

        """

    /// Every byte value four times: what a text path would mangle (NUL, invalid UTF-8, CR LF,
    /// a multipart boundary's dashes).
    static let image: [UInt8] = Array(repeating: Array(0...255), count: 4).flatMap { $0 }

    static func multipart(_ parts: [(name: String, file: String?, content: [UInt8])], boundary: String) -> [UInt8] {
        var body: [UInt8] = []
        for part in parts {
            var head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(part.name)\""
            if let file = part.file { head += "; filename=\"\(file)\"\r\nContent-Type: image/png" }
            body += Array((head + "\r\n\r\n").utf8) + part.content + Array("\r\n".utf8)
        }
        return body + Array("--\(boundary)--\r\n".utf8)
    }

    /// A fresh database of `dialect` with the photo table, served with `endpoints`: `body` gets
    /// the running server and runs SQL scripts on the database with `execute`. Nothing runs when
    /// the dialect has no database here.
    static func withPhotos(
        _ dialect: SQLDialect, prefix: String, endpoints: String,
        _ body: (_ service: InProcessServer, _ execute: (String) async throws -> Void) async throws -> Void
    ) async throws {
        guard let database = try TestDatabases.make(dialect, prefix: prefix) else { return }
        defer { database.drop() }
        func execute(_ script: String) async throws {
            try await onThread {
                let connection = try Drivers.driver(for: database.url).connect(readOnly: false, statistics: QueryStatistics())
                defer { connection.close() }
                try connection.executeScript(script)
            }
        }
        try await execute(Self.schema[dialect]!)
        let directory = try ServiceDirectory(databaseURL: database.url, extraEndpoints: ["photos.yaml": endpoints], shipped: false)
        defer { directory.remove() }
        let service = try await InProcessServer.start(directory)
        try await body(service, execute)
    }

    /// Sends `body` as a `method` request to `target`, with its `Content-Type` when given.
    static func send(
        _ service: InProcessServer, _ method: String, _ target: String, _ contentType: String?, _ body: [UInt8]
    ) async throws -> HTTPTestResponse {
        try await RawHTTP.send(
            port: service.port, RawHTTP.request(method, target, headers: contentType.map { [("Content-Type", $0)] } ?? [], body: body))
    }

    /// The operations of `path` in `/openapi.json`'s body.
    static func operations(_ document: HTTPTestResponse, _ path: String) throws -> [String: Any]? {
        let paths = (try JSONSerialization.jsonObject(with: Data(document.body)) as? [String: Any])?["paths"] as? [String: Any]
        return paths?[path] as? [String: Any]
    }

    @Test("a body, a multipart file and Base64 store the same bytes, served back as they are; 415 and 400 store nothing",
          arguments: SQLDialect.allCases)
    func uploads(_ dialect: SQLDialect) async throws {
        try await Self.withPhotos(dialect, prefix: "spout_rel_uploads", endpoints: Self.endpoints) { service, _ in
            try await Self.servesUploads(service)
        }
    }

    private static func servesUploads(_ service: InProcessServer) async throws {
        func send(_ method: String, _ target: String, _ contentType: String?, _ body: [UInt8]) async throws -> HTTPTestResponse {
            try await Self.send(service, method, target, contentType, body)
        }
        let boundary = "----spout--boundary"
        let form = "multipart/form-data; boundary=\(boundary)"
        let half = Array(Self.image.prefix(300))

        // The body, then replaced by another body.
        let put = try await send("PUT", "/photos/a", "image/png", half)
        let replaced = try await send("PUT", "/photos/a", "image/jpeg", Self.image)
        let wrongType = try await send("PUT", "/photos/a", "application/json", Array(#"{"image":"AAAA"}"#.utf8))
        let noType = try await send("PUT", "/photos/a", nil, [1, 2, 3])
        let empty = try await send("PUT", "/photos/b", "image/png", [])
        let tooLarge = try await send("PUT", "/photos/b", "image/png", [UInt8](repeating: 0xFF, count: 1024 * 1024 + 1))
        // An endpoint's own limit, above or below the server's; by Content-Length and in chunks.
        let large = [UInt8]((0..<2_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let putLarge = try await send("PUT", "/large/g", "image/png", large)
        let g = try await service.get("/photos/g")
        let tooLargeThere = try await send("PUT", "/large/h", "image/png", [UInt8](repeating: 1, count: 3_000_001))
        let small = try await send("PUT", "/small/s", "image/png", Array(repeating: 2, count: 10))
        let tooSmall = try await send("PUT", "/small/t", "image/png", Array(repeating: 2, count: 11))
        let chunked = Array("PUT /small/u HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: image/png\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\nghijkl\r\n0\r\n\r\n".utf8)
        let tooSmallInChunks = try await RawHTTP.send(port: service.port, chunked)
        let a = try await service.get("/photos/a")
        // PostgreSQL is told the parameter is bytea: length() counts bytes, not the hex text.
        let measured = try await send("PUT", "/measure", "image/png", Self.image)
        // A multipart file part beside a text part.
        let multipart = try await send(
            "POST", "/photos", form,
            Self.multipart([("name", nil, Array("c".utf8)), ("caption", nil, Array("Grüße".utf8)), ("image", "c.png", Self.image)],
                           boundary: boundary))
        let c = try await service.get("/photos/c")
        let cCaption = try await service.get("/photos/c/caption")
        // A caption that is not UTF-8 is refused, and nothing is stored.
        let badCaption = try await send(
            "POST", "/photos", form,
            Self.multipart([("name", nil, Array("e".utf8)), ("caption", nil, [0xFF, 0xFE]), ("image", "e.png", Self.image)],
                           boundary: boundary))
        // Base64 in JSON, the form bytes are written in.
        let json = try await send(
            "POST", "/photos", "application/json",
            Array(#"{"name":"d","image":"\#(Data(Self.image).base64EncodedString())"}"#.utf8))
        let d = try await service.get("/photos/d")
        let notBase64 = try await send("POST", "/photos", "application/json", Array(#"{"name":"f","image":"not base64!"}"#.utf8))
        let e = try await service.get("/photos/e")
        let f = try await service.get("/photos/f")
        let b = try await service.get("/photos/b")
        let document = try await service.get("/openapi.json")
        await service.stop()

        #expect(put.status == 204, "\(put.text)")
        #expect(replaced.status == 204, "\(replaced.text)")
        #expect(wrongType.status == 415)
        #expect(wrongType.text == #"{"error":"unsupported media type application/json: send the body as image/*","parameter":"image"}"#)
        #expect(noType.status == 415)
        #expect(noType.text == #"{"error":"a body without Content-Type: send it as image/*","parameter":"image"}"#)
        #expect(empty.status == 400)
        #expect(empty.text == #"{"error":"missing required parameter","parameter":"image"}"#)
        #expect(tooLarge.status == 413)
        #expect(tooLarge.text == #"{"error":"request body too large: at most 1048576 bytes"}"#)
        #expect(putLarge.status == 204, "\(putLarge.status) \(putLarge.text)")
        #expect(g.body == large)
        #expect(tooLargeThere.status == 413)
        #expect(tooLargeThere.text == #"{"error":"request body too large: at most 3000000 bytes"}"#)
        #expect(small.status == 204, "\(small.text)")
        #expect(tooSmall.status == 413)
        #expect(tooSmall.text == #"{"error":"request body too large: at most 10 bytes"}"#)
        #expect(tooSmallInChunks.status == 413, "\(tooSmallInChunks.status) \(tooSmallInChunks.text)")
        #expect(a.status == 200 && a.body == Self.image, "\(a.status) \(a.body.count)")
        #expect(measured.text == #"{"size":1024}"#, "\(measured.text)")
        #expect(multipart.status == 204, "\(multipart.text)")
        #expect(c.body == Self.image)
        #expect(cCaption.text == #""Grüße""#)
        #expect(badCaption.status == 400)
        #expect(badCaption.text == #"{"error":"invalid UTF-8","parameter":"caption"}"#)
        #expect(json.status == 204, "\(json.text)")
        #expect(d.body == Self.image)
        #expect(notBase64.status == 400)
        #expect(notBase64.text == #"{"error":"invalid bytes: send Base64, or the file as a multipart part","parameter":"image","value":"not base64!"}"#)
        #expect(e.status == 404)
        #expect(f.status == 404)
        #expect(b.status == 404)

        // OpenAPI: the upload's body is the file; the form's part is the file, its JSON Base64.
        let upload = (try Self.operations(document, "/photos/{name}")?["put"] as? [String: Any])?["requestBody"] as? [String: Any]
        let uploadSchema = ((upload?["content"] as? [String: Any])?["image/*"] as? [String: Any])?["schema"] as? [String: String]
        #expect(uploadSchema == ["type": "string", "format": "binary", "description": "The photo."], "\(String(describing: upload))")
        #expect(upload?["required"] as? Bool == true)
        let post = (try Self.operations(document, "/photos")?["post"] as? [String: Any])?["requestBody"] as? [String: Any]
        func imageSchema(_ mediaType: String) -> [String: String]? {
            let schema = ((post?["content"] as? [String: Any])?[mediaType] as? [String: Any])?["schema"] as? [String: Any]
            return (schema?["properties"] as? [String: Any])?["image"] as? [String: String]
        }
        #expect(imageSchema("multipart/form-data") == ["type": "string", "contentMediaType": "application/octet-stream"])
        #expect(imageSchema("application/json") == ["type": "string", "contentEncoding": "base64"])
    }

    static let typedEndpoints = """
        paths:
          /typed/{name}:
            put:
              description: Stores a photo of any image type with its type.
              sql: |
                INSERT INTO photo (name, image, media_type) VALUES (:name, :image, :imageType)
                ON CONFLICT (name) DO UPDATE SET image = excluded.image, media_type = excluded.media_type
              body: image
              mediaType: image/*
              mediaTypeParameter: imageType
              result: none
              parameters:
                image: {type: bytes, required: true}
            get:
              description: The photo, as the type it was stored with.
              sql: SELECT image, media_type AS "mediaType" FROM photo WHERE name = :name
              result: bytes
              mediaType: image/*
              mediaTypeColumn: mediaType

        """

    @Test("each file's media type is stored beside it and served with it, within the endpoint's range; the query cannot set it",
          arguments: SQLDialect.allCases)
    func mediaTypePerFile(_ dialect: SQLDialect) async throws {
        try await Self.withPhotos(dialect, prefix: "spout_rel_typed", endpoints: Self.typedEndpoints) { service, execute in
            try await Self.servesTypedFiles(service, execute: execute)
        }
    }

    private static func servesTypedFiles(_ service: InProcessServer, execute: (String) async throws -> Void) async throws {
        func put(_ target: String, _ contentType: String, _ body: [UInt8]) async throws -> HTTPTestResponse {
            try await Self.send(service, "PUT", target, contentType, body)
        }
        let heic: [UInt8] = [0, 0, 0, 0x18] + Array("ftypheic".utf8)
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

        let putHEIC = try await put("/typed/h", "Image/HEIC", heic)
        // A query string cannot set the type the body carries.
        let putPNG = try await put("/typed/p?imageType=text/html", "image/png", png)
        let h = try await service.get("/typed/h")
        let p = try await service.get("/typed/p", accept: "image/png")
        let revalidated = try await service.get("/typed/p", headers: [("If-None-Match", p.header("ETag") ?? "")])
        let refused = try await service.get("/typed/h", accept: "image/png")
        let missing = try await service.get("/typed/none")
        // Types stored some other way: outside the range, or none.
        try await execute("UPDATE photo SET media_type = 'text/html' WHERE name = 'h'; UPDATE photo SET media_type = NULL WHERE name = 'p';")
        let outside = try await service.get("/typed/h")
        let none = try await service.get("/typed/p")
        let document = try await service.get("/openapi.json")
        await service.stop()

        #expect(putHEIC.status == 204, "\(putHEIC.text)")
        #expect(putPNG.status == 204, "\(putPNG.text)")
        #expect(h.status == 200 && h.body == heic)
        #expect(h.header("Content-Type") == "image/heic")
        #expect(h.header("X-Content-Type-Options") == "nosniff")
        #expect(h.header("Content-Security-Policy")?.contains("sandbox") == true)
        #expect(p.body == png && p.header("Content-Type") == "image/png", "\(p.headers)")
        #expect(revalidated.status == 304)
        #expect(refused.status == 406)
        #expect(refused.text == #"{"error":"not acceptable: this resource is image/heic"}"#)
        #expect(missing.status == 404)
        #expect(outside.status == 200 && outside.body == heic)
        #expect(outside.header("Content-Type") == "application/octet-stream")
        #expect(none.header("Content-Type") == "application/octet-stream")
        // The same bytes under another type are another representation.
        #expect(none.header("ETag") != p.header("ETag"))
        // The type's parameter is no parameter a client sends; the file's type is the range.
        let operations = try Self.operations(document, "/typed/{name}")
        // (Headers aside: a write's optional Idempotency-Key.)
        let parameters = ((operations?["put"] as? [String: Any])?["parameters"] as? [[String: Any]])?
            .filter { $0["in"] as? String != "header" }.compactMap { $0["name"] as? String }
        #expect(parameters == ["name"])
        let served = ((((operations?["get"] as? [String: Any])?["responses"] as? [String: Any])?["200"] as? [String: Any])?["content"]
            as? [String: Any])?.keys.sorted()
        #expect(served == ["image/*"])
    }
}
