import Foundation
import SpoutCore
import SpoutData
import SpoutDrivers
import SpoutEndpoints
import SpoutHTTP
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Bulk creates answer the keys they made (issue #61), through real sockets on each database:
/// `POST /litters/bulk` inserts kittens `RETURNING` their columns, and the answer carries those
/// rows in record order, once the transaction has committed, or nothing but the error.
@Suite("Bulk writes, keys made")
struct BulkWriteKeysTests {
    /// A pets database with a table `litter` and `/litters`: a create whose statement returns
    /// the row it made, bulk. (Not `pet`, whose trigger updates one row per statement: a
    /// transaction of 85,000 of those is slow on PostgreSQL, which keeps every version.)
    static func withLitters(_ backend: SQLDialect, _ body: (InProcessServer, Database) async throws -> Void) async throws {
        let store = try await IdempotencyKeyTests.petsStore(backend)
        defer { store.drop() }
        try await onThread {
            let connection = try Drivers.driver(for: store.temporary.url).connect(readOnly: false, statistics: QueryStatistics())
            defer { connection.close() }
            try connection.executeScript("CREATE TABLE litter (name VARCHAR(20) NOT NULL PRIMARY KEY, owner VARCHAR(255), species VARCHAR(20))")
            if backend == .postgres { try connection.executeScript("GRANT SELECT, INSERT ON litter TO \(store.appRole)") }
        }
        var endpoints = try store.endpoints("""
            auth:
              token: jwt
              methods: [POST]
            paths:
              /litters:
                post:
                  sql: >-
                    INSERT INTO litter (name, owner, species) VALUES (:name, :claims.sub, :species)
                    RETURNING name, owner, species
                  result: created
                  location: /pets/{name}
                  bulk: true
                  parameters:
                    - {name: name, type: string, required: true, maxLength: 20}
                    - {name: species, type: string}
            """)
        endpoints.idempotencyState = IdempotencyState(retention: .seconds(3_600))
        let database = try store.open()
        defer { database.close() }
        try await IdentityAPITests.withService(endpoints, database: database) { service in
            try await body(service, database)
        }
    }

    /// `count` kittens as JSON Lines, `<prefix>00001` onwards, one line each.
    static func kittens(_ count: Int, prefix: String = "kit-", replacing line: (number: Int, text: String)? = nil) -> [UInt8] {
        var text = ""
        for number in 1...count {
            if let line, line.number == number {
                text += line.text + "\n"
            } else {
                text += #"{"name":"\#(Self.name(number, prefix: prefix))","species":"cat"}"# + "\n"
            }
        }
        return Array(text.utf8)
    }

    static func name(_ number: Int, prefix: String = "kit-") -> String { prefix + String(format: "%05d", number) }

    static func post(_ service: InProcessServer, _ body: [UInt8], token: String, key: String? = nil) async throws -> HTTPTestResponse {
        try await BulkWriteTests.bulk(service, body, contentType: "application/x-ndjson", token: token, key: key, path: "/litters/bulk")
    }

    /// The kittens in the database, as a JSON array of the columns the statement returns, by name.
    static func kittensStored(_ database: Database) async throws -> String {
        try await onThread {
            let sink = CollectingSink()
            try database.query("SELECT name, owner, species FROM litter WHERE name LIKE 'kit-%' ORDER BY name").write(as: .json(), to: sink)
            return sink.text
        }
    }

    static func litterCount(_ database: Database) async throws -> Int {
        try await onThread {
            let sink = CollectingSink()
            try database.query("SELECT count(*) AS n FROM litter").write(as: .json(), to: sink)
            return Int(sink.text.filter(\.isNumber))!
        }
    }

    @Test("the keys come back in record order, short ones whole and long ones streamed, and are the rows made", arguments: PetsAPITests.backends)
    func keysInRecordOrder(_ backend: SQLDialect) async throws {
        try await Self.withLitters(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let two = try await Self.post(service, Self.kittens(2, prefix: "two-"), token: diane)
            #expect(two.status == 200 && two.header("content-length") != nil, "\(two.status) \(two.text)")
            #expect(
                two.text == #"{"records":2,"changed":2,"keys":[{"name":"two-00001","owner":"Diane","species":"cat"},"#
                    + #"{"name":"two-00002","owner":"Diane","species":"cat"}]}"#, "\(two.text)")
            // Past the pipeline's window (1,024 in flight) three times, and far past a chunk.
            let count = 3 * 1024 + 5
            let many = try await Self.post(service, Self.kittens(count), token: diane)
            #expect(many.status == 200 && many.header("transfer-encoding") == "chunked", "\(many.status) \(many.text.prefix(200))")
            let prefix = "{\"records\":\(count),\"changed\":\(count),\"keys\":"
            #expect(many.text.hasPrefix(prefix) && many.text.hasSuffix("}"), "\(many.text.prefix(200))")
            let keys = String(many.text.dropFirst(prefix.count).dropLast())
            // The names are in record order and sort that way: the stored rows by name are the keys.
            #expect(keys == (try await Self.kittensStored(database)))
            let decoded = try JSONSerialization.jsonObject(with: Data(keys.utf8)) as? [[String: Any]] ?? []
            #expect(decoded.count == count)
            #expect(decoded.enumerated().allSatisfy { $0.element["name"] as? String == Self.name($0.offset + 1) })
        }
    }

    @Test("a bad record after many keys were kept commits nothing, and the answer is only the error", arguments: PetsAPITests.backends)
    func badRecordAnswersOnlyTheError(_ backend: SQLDialect) async throws {
        try await Self.withLitters(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await Self.litterCount(database)
            // Refused by its argument, then in the database (a name taken: record 1's).
            let tooLong = #"{"name":"a-name-longer-than-twenty","species":"cat"}"#
            let refused = try await Self.post(service, Self.kittens(3_000, replacing: (2_999, tooLong)), token: diane)
            #expect(refused.status == 400 && refused.text.contains(#""line":2999,"parameter":"name""#), "\(refused.text)")
            #expect(!refused.text.contains("keys"))
            let taken = try await Self.post(service, Self.kittens(3_000, replacing: (2_500, #"{"name":"kit-00001"}"#)), token: diane)
            #expect(taken.status == 409 && taken.text.hasPrefix(#"{"line":2500,"#) && !taken.text.contains("keys"), "\(taken.status) \(taken.text)")
            #expect(try await Self.litterCount(database) == before)
        }
    }

    @Test("a replay under an Idempotency-Key answers the same bytes, keys included, and applies nothing", arguments: PetsAPITests.backends)
    func replayAnswersTheSameKeys(_ backend: SQLDialect) async throws {
        try await Self.withLitters(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let body = Self.kittens(2_000)
            let first = try await Self.post(service, body, token: diane, key: "litter-1")
            #expect(first.status == 200 && first.text.contains(#""keys":[{"name":"kit-00001""#), "\(first.status) \(first.text.prefix(200))")
            let after = try await Self.litterCount(database)
            let again = try await Self.post(service, body, token: diane, key: "litter-1")
            #expect(again.status == 200 && again.header("idempotent-replayed") == "true")
            #expect(again.body == first.body)
            #expect(try await Self.litterCount(database) == after)
        }
    }

    @Test("/openapi.json describes the keys of a bulk create")
    func openAPI() async throws {
        try await Self.withLitters(.sqlite) { service, _ in
            let document = try await RawHTTP.get(port: service.port, "/openapi.json")
            let root = try JSONSerialization.jsonObject(with: Data(document.body)) as? [String: Any]
            func answer(_ path: String) -> [String: Any]? {
                let paths = root?["paths"] as? [String: Any]
                let post = (paths?[path] as? [String: Any])?["post"] as? [String: Any]
                let ok = (post?["responses"] as? [String: Any])?["200"] as? [String: Any]
                let json = (ok?["content"] as? [String: Any])?["application/json"] as? [String: Any]
                return json?["schema"] as? [String: Any]
            }
            let litters = answer("/litters/bulk")
            #expect(litters?["required"] as? [String] == ["records", "changed", "keys"])
            let keys = (litters?["properties"] as? [String: Any])?["keys"] as? [String: Any]
            #expect(keys?["type"] as? String == "array")
        }
    }

    @Test("keys past what an Idempotency-Key keeps are a 413 that commits nothing; without a key they stream", arguments: PetsAPITests.backends)
    func keyedKeysHaveALimit(_ backend: SQLDialect) async throws {
        try await Self.withLitters(backend) { service, database in
            let diane = try await IdentityAPITests.token("Diane")
            let before = try await Self.litterCount(database)
            // 53 bytes of keys a record: 85,000 records make more than 4 MiB.
            let body = Self.kittens(85_000, prefix: "big-")
            let keyed = try await Self.post(service, body, token: diane, key: "big-litter")
            #expect(keyed.status == 413 && keyed.text.contains(#""parameter":"Idempotency-Key""#), "\(keyed.status) \(keyed.text)")
            #expect(try await Self.litterCount(database) == before)
            let unkeyed = try await Self.post(service, body, token: diane)
            #expect(unkeyed.status == 200 && unkeyed.body.count > 4 << 20, "\(unkeyed.status) \(unkeyed.text.prefix(200))")
            #expect(unkeyed.text.hasSuffix(#"{"name":"big-85000","owner":"Diane","species":"cat"}]}"#))
            #expect(try await Self.litterCount(database) == before + 85_000)
        }
    }
}
