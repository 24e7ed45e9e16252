import Foundation
import Synchronization
import SpoutCore
import SpoutData
import SpoutDrivers
import SpoutEndpoints
import SpoutHTTP
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Sync reads of the pets (issue #60) through real sockets on each database: the first sync,
/// deltas with tombstones for deletions, owner changes and detail changes, bad cursors, and a
/// client's copy that converges on the caller's result while writers race.
@Suite("Sync reads")
struct SyncReadTests {
    /// The shipped endpoints on a pets database Spout reaches as an ordinary role, with change
    /// tracking set up by the tables' owner (on PostgreSQL, the cluster's superuser; the
    /// ordinary role may read the change log, as docs/endpoints.md says to grant).
    static func withSyncedPets(
        _ backend: SQLDialect, endpoints: EndpointSet? = nil, configuration: ServerConfiguration = InProcessServer.testConfiguration,
        _ body: (InProcessServer, Database, _ ownerURL: String) async throws -> Void
    ) async throws {
        let store = try IdentityDatabase.make(backend) { connection in
            try PetsLoader(sqlDirectory: Repository.sqlDirectory).load(into: connection)
        }
        defer { store.drop() }
        let endpoints = try endpoints ?? Repository.shippedEndpoints()
        let owner = try Drivers.open(store.temporary.url)
        try await endpoints.prepareSync(on: owner)
        if backend == .postgres {
            try await onThread {
                let connection = try Drivers.driver(for: store.temporary.url).connect(readOnly: false, statistics: QueryStatistics())
                defer { connection.close() }
                try connection.executeScript("GRANT SELECT ON spout_changes, spout_change_horizon TO \(store.appRole)")
            }
        }
        owner.close()
        let database = try store.open()
        defer { database.close() }
        // Spout's own role finds everything in place and changes nothing.
        try await endpoints.prepareSync(on: database)
        try await IdentityAPITests.withService(endpoints, database: database, configuration: configuration) { service in
            try await body(service, database, store.temporary.url)
        }
    }

    /// A sync response, parsed: the cursor, the names to forget, and each row's JSON bytes by
    /// name.
    struct Delta {
        var cursor: String
        var deleted: [String]
        var rows: [(name: String, json: String)]

        init(_ response: HTTPTestResponse) throws {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any], "\(response.text)")
            self.cursor = try #require(object["cursor"] as? String)
            self.deleted = try #require(object["deleted"] as? [[String: Any]]).compactMap { $0["name"] as? String }
            self.rows = try Self.rows(in: response.text)
        }

        /// The rows' bytes, split out of the body's `"rows":[…]` as the server wrote them.
        static func rows(in text: String) throws -> [(name: String, json: String)] {
            let marker = try #require(text.range(of: "\"rows\":"))
            let array = String(text[marker.upperBound...].dropLast())
            return try SyncReadTests.objects(inArray: array)
        }
    }

    /// The top-level objects of a JSON array's text, each as written, with its `name`.
    static func objects(inArray text: String) throws -> [(name: String, json: String)] {
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])
        var pieces: [String] = []
        var depth = 0
        var inString = false
        var escaped = false
        var current = ""
        for character in text.dropFirst().dropLast() {
            if depth > 0 || character == "{" { current.append(character) }
            if inString {
                if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { inString = false }
                continue
            }
            switch character {
            case "\"": inString = true
            case "{", "[": depth += 1
            case "}", "]":
                depth -= 1
                if depth == 0 {
                    pieces.append(current)
                    current = ""
                }
            default: break
            }
        }
        #expect(pieces.count == parsed.count)
        return zip(parsed, pieces).map { (($0["name"] as? String) ?? "", $1) }
    }

    /// A client's copy of a synced result: rows by name, kept current by deltas.
    struct Copy {
        var rows: [String: String] = [:]
        var cursor = "0"

        mutating func apply(_ delta: Delta) {
            for name in delta.deleted { self.rows[name] = nil }
            for row in delta.rows { self.rows[row.name] = row.json }
            self.cursor = delta.cursor
        }
    }

    static func sync(_ service: InProcessServer, _ query: String, since: String) async throws -> Delta {
        let response = try await service.get("/pets?\(query)&since=\(since)")
        #expect(response.status == 200, "\(response.status) \(response.text)")
        #expect(response.header("content-type") == "application/json")
        return try Delta(response)
    }

    /// The caller's result now, by the ordinary GET, as a copy would hold it.
    static func current(_ service: InProcessServer, _ query: String) async throws -> [String: String] {
        let response = try await service.get("/pets?\(query)")
        #expect(response.status == 200)
        return Dictionary(uniqueKeysWithValues: try Self.objects(inArray: response.text).map { ($0.name, $0.json) })
    }

    @Test("the first sync is the whole result and a cursor; a delta holds changed rows and tombstones for deletions, owner changes; a detail's change sends its parent", arguments: PetsAPITests.backends)
    func deltas(_ backend: SQLDialect) async throws {
        try await Self.withSyncedPets(backend) { service, database, ownerURL in
            let query = "owner=Diane&details=events"
            let first = try await Self.sync(service, query, since: "0")
            #expect(first.deleted.isEmpty)
            #expect(first.rows.map(\.name) == ["Bowser", "Puffball"])
            var copy = Copy()
            copy.apply(first)
            #expect(copy.rows == (try await Self.current(service, query)))

            // Nothing changed: nothing but a cursor, sent whole. (On PostgreSQL a delta may
            // repeat rows of an earlier one while another transaction of the cluster holds the
            // snapshot's xmin back, the change log's contract: there, only what must be in it.)
            let quiet = try await Self.sync(service, query, since: copy.cursor)
            if backend == .sqlite {
                #expect(quiet.rows.isEmpty && quiet.deleted.isEmpty)
                let quietResponse = try await service.get("/pets?\(query)&since=\(copy.cursor)")
                #expect(quietResponse.header("content-length") == String(quietResponse.body.count))
                #expect(quietResponse.header("transfer-encoding") == nil)
            }
            copy.apply(quiet)

            // Another client: a new pet, a change, a pet given away; an event by SQL.
            let diane = try await IdentityAPITests.token("Diane")
            #expect(try await IdentityAPITests.send(service, "POST", "/pets", token: diane, form: [("name", "Rex"), ("species", "dog")]).status == 201)
            #expect(try await IdentityAPITests.send(service, "POST", "/pets/Bowser", token: diane, form: [("species", "wolf")]).status == 200)
            #expect(try await IdentityAPITests.send(service, "POST", "/pets/Bowser", token: diane, form: [("sex", "f")]).status == 200)
            #expect(try await IdentityAPITests.send(service, "POST", "/pets/Puffball", token: diane, form: [("owner", "Gwen")]).status == 200)
            let delta = try await Self.sync(service, query, since: copy.cursor)
            #expect(Set(delta.rows.map(\.name)).isSuperset(of: ["Bowser", "Rex"]) && delta.deleted.contains("Puffball"))
            // A key changed more than once (Bowser twice, Puffball's row before and after its
            // owner's change) is in a delta once.
            #expect(
                delta.rows.count == Set(delta.rows.map(\.name)).count && delta.deleted.count == Set(delta.deleted).count,
                "\(delta.rows.map(\.name)) \(delta.deleted)")
            if backend == .sqlite { #expect(Set(delta.rows.map(\.name)) == ["Bowser", "Rex"] && delta.deleted == ["Puffball"]) }
            copy.apply(delta)
            #expect(copy.rows == (try await Self.current(service, query)))

            try await LiveNoticesTests.write(ownerURL, "INSERT INTO event (name, \"date\", type, remark) VALUES ('Bowser', '2001-02-03', 'vet', 'checkup')")
            let detail = try await Self.sync(service, query, since: copy.cursor)
            #expect(detail.rows.contains { $0.name == "Bowser" && $0.json.contains("checkup") }, "\(detail.rows)")
            if backend == .sqlite { #expect(detail.rows.map(\.name) == ["Bowser"]) }
            copy.apply(detail)
            #expect(try await IdentityAPITests.send(service, "DELETE", "/pets/Rex", token: diane).status == 204)
            let deletion = try await Self.sync(service, query, since: copy.cursor)
            #expect(deletion.deleted.contains("Rex") && !deletion.rows.contains { $0.name == "Rex" }, "\(deletion.deleted)")
            if backend == .sqlite { #expect(deletion.deleted == ["Rex"] && deletion.rows.isEmpty) }
            copy.apply(deletion)
            #expect(copy.rows == (try await Self.current(service, query)))
            _ = database
        }
    }

    @Test("JSON Lines: the cursor, then one line per tombstone and per row", arguments: PetsAPITests.backends)
    func jsonLines(_ backend: SQLDialect) async throws {
        try await Self.withSyncedPets(backend) { service, _, _ in
            let first = try await service.get("/pets?owner=Gwen&since=0", accept: "application/x-ndjson")
            #expect(first.status == 200 && first.header("content-type") == "application/x-ndjson")
            let lines = first.text.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix(#"{"cursor":""#) == true)
            #expect(lines.dropFirst().allSatisfy { $0.hasPrefix(#"{"row":{"name":"#) && $0.hasSuffix("}}") }, "\(lines)")
            #expect(lines.count == 4)
            let csv = try await service.get("/pets?owner=Gwen&since=0", accept: "text/csv")
            #expect(csv.status == 406)
        }
    }

    @Test("a tampered cursor, one made for another filter, and garbage are 400 naming since; an expired one is 410", arguments: PetsAPITests.backends)
    func badCursors(_ backend: SQLDialect) async throws {
        try await Self.withSyncedPets(backend) { service, _, ownerURL in
            let first = try await Self.sync(service, "owner=Diane", since: "0")
            var tampered = Array(first.cursor)
            tampered[tampered.count / 2] = tampered[tampered.count / 2] == "A" ? "B" : "A"
            for (query, cursor) in [("owner=Diane", String(tampered)), ("owner=Gwen", first.cursor), ("owner=Diane", "nonsense"), ("owner=Diane", "-1")] {
                let answer = try await service.get("/pets?\(query)&since=\(cursor)")
                #expect(answer.status == 400, "\(query) \(cursor): \(answer.status)")
                #expect(answer.text.contains(#""parameter":"since""#), "\(answer.text)")
            }
            // A change, then everything older than now pruned: the cursor cannot continue.
            let diane = try await IdentityAPITests.token("Diane")
            #expect(try await IdentityAPITests.send(service, "POST", "/pets/Bowser", token: diane, form: [("sex", "f")]).status == 200)
            try await Task.sleep(for: .milliseconds(1_100))
            let owner = try Drivers.open(ownerURL)
            defer { owner.close() }
            #expect(try await Repository.shippedEndpoints().pruneChanges(on: owner, retention: .zero) >= 1)
            let expired = try await service.get("/pets?owner=Diane&since=\(first.cursor)")
            #expect(expired.status == 410, "\(expired.status) \(expired.text)")
            #expect(expired.text.contains("since=0"))
            let again = try await Self.sync(service, "owner=Diane", since: "0")
            #expect(try await service.get("/pets?owner=Diane&since=\(again.cursor)").status == 200)
        }
    }

    @Test("convergence: writers insert, update, delete and move pets and events between owners, some transactions held open, while clients of each owner sync; after one last sync every copy equals its result", arguments: PetsAPITests.backends)
    func convergence(_ backend: SQLDialect) async throws {
        try await Self.withSyncedPets(backend) { service, _, ownerURL in
            let owners = ["Diane", "Gwen", "Harold", "Benny"]
            let queries = owners.map { "owner=\($0)&details=events" } + ["details=events"]
            var copies = [Copy](repeating: Copy(), count: queries.count)
            let stop = ManagedAtomicFlag()
            let writes = ManagedCounter()
            // Writers on connections of their own, as other services of the database would write.
            let writers = (0..<3).map { writer in
                Self.writer(url: ownerURL, seed: UInt64(writer + 1), holdsOpen: backend == .postgres && writer == 0, stop: stop, writes: writes)
            }
            // At least 8 s, and on a loaded machine until enough syncs and writes interleaved.
            let started = ContinuousClock.now
            var syncs = 0
            while ContinuousClock.now - started < .seconds(8) || (ContinuousClock.now - started < .seconds(120) && (syncs <= 20 || writes.value <= 100)) {
                for index in queries.indices {
                    copies[index].apply(try await Self.sync(service, queries[index], since: copies[index].cursor))
                    syncs += 1
                }
            }
            stop.set()
            for writer in writers { try await writer.value }
            for index in queries.indices {
                copies[index].apply(try await Self.sync(service, queries[index], since: copies[index].cursor))
                let current = try await Self.current(service, queries[index])
                #expect(copies[index].rows == current, "\(queries[index]): the copy differs from the result")
            }
            #expect(writes.value > 100, "only \(writes.value) writes")
            #expect(syncs > 20)
            print("sync convergence (\(backend)): \(writes.value) writes and \(syncs) syncs in \(ContinuousClock.now - started), every copy equal")
        }
    }
}

/// A flag one task sets and others read.
final class ManagedAtomicFlag: Sendable {
    private let flag = Mutex(false)
    func set() { self.flag.withLock { $0 = true } }
    var isSet: Bool { self.flag.withLock { $0 } }
}

/// A count several threads add to.
final class ManagedCounter: Sendable {
    private let count = Mutex(0)
    func add() { self.count.withLock { $0 += 1 } }
    var value: Int { self.count.withLock { $0 } }
}

extension SyncReadTests {
    /// A writer on a thread of its own until `stop` is set: random inserts, updates, owner
    /// moves and deletes of pets, and events added, each its own transaction; with
    /// `holdsOpen`, each of its transactions stays open a while after writing, so later
    /// transactions of the other writers commit before it.
    static func writer(url: String, seed: UInt64, holdsOpen: Bool, stop: ManagedAtomicFlag, writes: ManagedCounter) -> Task<Void, any Error> {
        Task.detached {
            try await onThread {
                var random = SeededGenerator(seed: seed)
                let connection = try Drivers.driver(for: url).connect(readOnly: false, statistics: QueryStatistics())
                defer { connection.close() }
                let owners = ["Diane", "Gwen", "Harold", "Benny", "Zed"]
                let names = (0..<24).map { "P\(seed)_\($0)" } + ["Bowser", "Puffball", "Claws", "Fang"]
                while !stop.isSet {
                    let name = names[Int(random.next() % UInt64(names.count))]
                    let owner = owners[Int(random.next() % UInt64(owners.count))]
                    let statement: String
                    switch random.next() % 5 {
                    case 0: statement = "INSERT INTO pet (name, owner, species) VALUES ('\(name)', '\(owner)', 'cat')"
                    case 1: statement = "UPDATE pet SET owner = '\(owner)' WHERE name = '\(name)'"
                    case 2: statement = "UPDATE pet SET species = 'w\(random.next() % 100)' WHERE name = '\(name)'"
                    case 3: statement = "DELETE FROM pet WHERE name = '\(name)'"
                    default: statement = "INSERT INTO event (name, \"date\", type) SELECT name, '2020-01-0\(1 + random.next() % 9)', 'visit' FROM pet WHERE name = '\(name)'"
                    }
                    do {
                        try connection.begin(readOnly: false)
                        try connection.executeScript(statement)
                        if holdsOpen { Thread.sleep(forTimeInterval: 0.15) }
                        try connection.commit()
                        writes.add()
                    } catch {
                        // A duplicate name or a lock: this write did not happen.
                        if connection.isInTransaction { try? connection.rollback() }
                    }
                }
            }
        }
    }
}

extension SyncReadTests {
    /// Loads an endpoint file holding `yaml` (with the pets' SQL directory) and returns its set
    /// or the error, whose text starts with the file's name and the line.
    static func load(_ yaml: String, database: String = "\"sqlite::memory:\"") throws -> Result<EndpointSet, ConfigurationError> {
        let service = try TemporaryDirectory()
        try service.write("config/spout.yaml", "database:\n  url: \(database)\nendpoints: [api/*.yaml]\nsqlDirectory: \(Repository.sqlDirectory)\n")
        try service.write("config/api/sync.yaml", yaml)
        let configuration = try SpoutConfiguration.load(
            file: (service.path as NSString).appendingPathComponent("config/spout.yaml"), environment: [:])
        do {
            return .success(try EndpointSet.load(configuration: configuration, environment: [:]))
        } catch {
            return .failure(error)
        }
    }

    static let syncYAML = """
        paths:
          /pets:
            get:
              sqlFile: pets/pets.sql
              parameters:
                - name: owner
                  type: string
              sync:
                key: [KEY]
                tables:
                  TABLES
        """

    @Test("a syncable endpoint declared wrongly stops the start at its line", arguments: [
        ("name", "pet: [name]\n      rowLimit: 5", "'sync' and 'rowLimit' do not go together"),
        ("nickname", "pet: [name]", "key column 'nickname' is not a column of the result"),
        ("name", "pet: [name, owner]", "'pet' names 2 column(s) for a key of 1"),
        ("name", "\"pet; drop\": [name]", "must be letters, digits and underscores"),
    ])
    func declaredWrongly(_ key: String, _ tables: String, _ message: String) throws {
        let yaml = Self.syncYAML.replacing("KEY", with: key).replacing("TABLES", with: tables)
        guard case .failure(let error) = try Self.load(yaml) else {
            Issue.record("loaded")
            return
        }
        #expect(error.description.contains("sync.yaml:"), "\(error)")
        #expect(error.line != nil)
        #expect(error.message.contains(message), "\(error.message)")
    }

    @Test("a table or column the database lacks stops the start naming the file and line of the table", arguments: PetsAPITests.backends)
    func unknownTable(_ backend: SQLDialect) async throws {
        let store = try IdentityDatabase.make(backend) { connection in
            try PetsLoader(sqlDirectory: Repository.sqlDirectory).load(into: connection)
        }
        defer { store.drop() }
        let database = try Drivers.open(store.temporary.url)
        defer { database.close() }
        for (tables, message) in [("pets: [name]", "sync table 'pets' of GET /pets is not a table of the database"),
                                  ("pet: [nom]", "sync table 'pet' of GET /pets has no column 'nom'")] {
            let endpoints = try Self.load(Self.syncYAML.replacing("KEY", with: "name").replacing("TABLES", with: tables)).get()
            do {
                try await endpoints.prepareSync(on: database)
                Issue.record("\(tables) prepared")
            } catch let error as ConfigurationError {
                #expect(error.description.contains("sync.yaml:11:"), "\(error)")
                #expect(error.message.hasPrefix(message), "\(error.message)")
            }
            #expect(!endpoints.syncState.isReady)
        }
    }
}

extension SyncReadTests {
    @Test("the OpenAPI document describes sync reads (the delta object, 410), live notices (the event stream, Last-Event-ID) and the writes' Idempotency-Key")
    func documented() throws {
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(try Repository.shippedEndpoints().openAPIDocument())) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: Any])
        let pets = try #require(paths["/pets"] as? [String: Any])
        let get = try #require(pets["get"] as? [String: Any])
        let responses = try #require(get["responses"] as? [String: Any])
        #expect(responses["410"] != nil)
        let ok = try #require(responses["200"] as? [String: Any])
        let json = try #require((ok["content"] as? [String: Any])?["application/json"] as? [String: Any])
        let alternatives = try #require((json["schema"] as? [String: Any])?["oneOf"] as? [[String: Any]])
        #expect(alternatives.count == 2 && (alternatives[1]["required"] as? [String]) == ["cursor", "deleted", "rows"])
        let since = (get["parameters"] as? [[String: Any]])?.first { $0["name"] as? String == "since" }
        #expect(since?["in"] as? String == "query")
        let post = try #require(pets["post"] as? [String: Any])
        let key = (post["parameters"] as? [[String: Any]])?.first { $0["name"] as? String == "Idempotency-Key" }
        #expect(key?["in"] as? String == "header" && key?["required"] as? Bool == false)
        #expect((get["parameters"] as? [[String: Any]])?.contains { $0["name"] as? String == "Idempotency-Key" } != true)
        // Live notices: the event stream and the header it resumes from.
        #expect((ok["content"] as? [String: Any])?["text/event-stream"] != nil)
        let lastEvent = (get["parameters"] as? [[String: Any]])?.first { $0["name"] as? String == "Last-Event-ID" }
        #expect(lastEvent?["in"] as? String == "header")
        #expect((post["parameters"] as? [[String: Any]])?.contains { $0["name"] as? String == "Last-Event-ID" } != true)
    }
}

extension SyncReadTests {
    @Test("a table and key column named in another case than the catalog's are tracked by their stored names", arguments: PetsAPITests.backends)
    func otherCase(_ backend: SQLDialect) async throws {
        let store = try IdentityDatabase.make(backend) { connection in
            try PetsLoader(sqlDirectory: Repository.sqlDirectory).load(into: connection)
        }
        defer { store.drop() }
        let database = try Drivers.open(store.temporary.url)
        defer { database.close() }
        let endpoints = try Self.load(Self.syncYAML.replacing("KEY", with: "name").replacing("TABLES", with: "PET: [Name]")).get()
        try await endpoints.prepareSync(on: database)
        #expect(endpoints.syncState.isReady)
        let table = try #require(endpoints.trackedTables.first)
        let keys = try await onThread {
            let connection = try Drivers.driver(for: store.temporary.url).connect(readOnly: false, statistics: QueryStatistics())
            defer { connection.close() }
            let log = try #require(connection as? any ChangeTracking)
            let start = try log.changeLogPosition().position
            try connection.executeScript("UPDATE pet SET species = 'wolf' WHERE name = 'Bowser'")
            return try log.changedKeys(since: start, tables: [table.logName])
        }
        #expect(keys == [[.text("Bowser")]])
    }
}

extension SyncReadTests {
    @Test("a write committed just before a sync read is in it, while other callers' reads after no change share the log's probe", arguments: PetsAPITests.backends)
    func writeBeforeQuietReads(_ backend: SQLDialect) async throws {
        try await Self.withSyncedPets(backend) { service, _, _ in
            let gwen = try await Self.sync(service, "owner=Gwen", since: "0").cursor
            let stop = ManagedAtomicFlag()
            // Syncs that keep a probe running (or waiting) whenever a write commits.
            let readers = (0..<4).map { _ in
                Task { () async throws -> Int in
                    var reads = 0
                    while !stop.isSet {
                        #expect(try await service.get("/pets?owner=Gwen&since=\(gwen)").status == 200)
                        reads += 1
                    }
                    return reads
                }
            }
            let diane = try await IdentityAPITests.token("Diane")
            var cursor = try await Self.sync(service, "owner=Diane", since: "0").cursor
            for round in 0..<20 {
                let name = "Quick\(round)"
                #expect(try await IdentityAPITests.send(service, "POST", "/pets", token: diane, form: [("name", name), ("species", "dog")]).status == 201)
                let delta = try await Self.sync(service, "owner=Diane", since: cursor)
                #expect(delta.rows.contains { $0.name == name }, "round \(round): \(delta.rows.map(\.name))")
                cursor = delta.cursor
            }
            stop.set()
            var reads = 0
            for reader in readers { reads += try await reader.value }
            #expect(reads > 0)
        }
    }

    @Test("a write by another connection, not through Spout, just before a sync read after no change is in it; on SQLite, while nothing commits, such reads run no statement", arguments: PetsAPITests.backends)
    func outsideWriteBeforeQuietRead(_ backend: SQLDialect) async throws {
        try await Self.withSyncedPets(backend) { service, database, ownerURL in
            var cursor = try await Self.sync(service, "owner=Gwen", since: "0").cursor
            let name = try #require(try await Self.current(service, "owner=Gwen").keys.sorted().first)
            // The first read after no change makes the database's commit watch.
            #expect(try await Self.sync(service, "owner=Gwen", since: cursor).rows.isEmpty)
            let before = database.statistics.statementCount
            let started = ContinuousClock.now
            for _ in 0..<20 {
                let quiet = try await Self.sync(service, "owner=Gwen", since: cursor)
                #expect(quiet.rows.isEmpty && quiet.deleted.isEmpty)
                // SQLite's position moves with its log only (PostgreSQL's with every transaction).
                if backend == .sqlite { #expect(quiet.cursor == cursor) }
            }
            if backend == .sqlite {
                // A probe again about once a second, to check the watch still reads the file.
                let seconds = Int((ContinuousClock.now - started) / .seconds(1))
                #expect(database.statistics.statementCount - before <= 2 + seconds)
            }
            let writer = try await onThread { try Drivers.driver(for: ownerURL).connect(readOnly: false, statistics: QueryStatistics()) }
            defer { writer.close() }
            for round in 0..<20 {
                let species = "species\(round)"
                try await onThread {
                    try writer.executeScript("UPDATE pet SET species = '\(species)' WHERE name = '\(name)'")
                }
                let delta = try await Self.sync(service, "owner=Gwen", since: cursor)
                #expect(delta.rows.map(\.name) == [name], "round \(round)")
                #expect(delta.rows.first?.json.contains(species) == true, "round \(round): \(delta.rows.map(\.json))")
                cursor = delta.cursor
                // PostgreSQL may send a row again once (the change log's contract); SQLite not.
                if backend == .sqlite { #expect(try await Self.sync(service, "owner=Gwen", since: cursor).rows.isEmpty) }
            }
        }
    }

    @Test("many sync reads after no change at once, among clients that leave at once: each is answered, whole, with a cursor that continues", arguments: PetsAPITests.backends)
    func manyQuietReads(_ backend: SQLDialect) async throws {
        // Sixty connections at once from one address: more than the default cap (32) admits.
        var configuration = InProcessServer.testConfiguration
        configuration.maximumConnectionsPerAddress = 64
        try await Self.withSyncedPets(backend, configuration: configuration) { service, _, _ in
            let first = try await Self.sync(service, "owner=Diane", since: "0")
            let target = "/pets?owner=Diane&since=\(first.cursor)"
            let answers = try await withThrowingTaskGroup(of: HTTPTestResponse?.self) { group in
                for index in 0..<60 {
                    // Every third client sends its read and goes away: its request may be the
                    // one whose task runs the probe the others wait for.
                    guard index % 3 == 0 else {
                        group.addTask { try await service.get(target) }
                        continue
                    }
                    group.addTask {
                        let connection = try await HTTPTestConnection.connect(port: service.port)
                        try connection.send("GET \(target) HTTP/1.1\r\nHost: localhost\r\n\r\n")
                        connection.closeNow()
                        return nil
                    }
                }
                var answers: [HTTPTestResponse] = []
                for try await answer in group { if let answer { answers.append(answer) } }
                return answers
            }
            #expect(answers.count == 40)
            var cursors: Set<String> = []
            for answer in answers {
                #expect(answer.status == 200, "\(answer.status) \(answer.text)")
                let delta = try Delta(answer)
                cursors.insert(delta.cursor)
                // On PostgreSQL a delta may repeat rows while another transaction of the cluster
                // holds the snapshot's xmin back (the change log's contract).
                if backend == .sqlite {
                    #expect(delta.rows.isEmpty && delta.deleted.isEmpty)
                    #expect(answer.header("content-length") == String(answer.body.count))
                    // Nothing moved the log: the cursor sent is the cursor answered.
                    #expect(delta.cursor == first.cursor)
                }
            }
            let diane = try await IdentityAPITests.token("Diane")
            #expect(try await IdentityAPITests.send(service, "POST", "/pets/Bowser", token: diane, form: [("species", "wolf")]).status == 200)
            for cursor in cursors {
                let delta = try await Self.sync(service, "owner=Diane", since: cursor)
                #expect(delta.rows.contains { $0.name == "Bowser" && $0.json.contains("wolf") })
            }
        }
    }

    /// `response`'s body as a JSON object, expecting a 200.
    static func okObject(_ response: HTTPTestResponse) throws -> [String: Any] {
        #expect(response.status == 200, "\(response.text)")
        return try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any], "\(response.text)")
    }

    static let eventsYAML = """
        paths:
          /events:
            get:
              sql: SELECT name, "date", type, remark FROM event ORDER BY name, "date"
              sync:
                key: [name, date]
                tables:
                  event: [name, date]
        """

    @Test("two endpoints of one statement with keys of their own each get their own delta", arguments: PetsAPITests.backends)
    func oneStatementTwoKeys(_ backend: SQLDialect) async throws {
        let yaml = Self.eventsYAML + """

              /events-by-date:
                get:
                  sql: SELECT name, "date", type, remark FROM event ORDER BY name, "date"
                  sync:
                    key: [date, name]
                    tables:
                      event: [date, name]
            """
        let endpoints = try Self.load(yaml).get()
        try await Self.withSyncedPets(backend, endpoints: endpoints) { service, _, ownerURL in
            var cursors: [String] = []
            for path in ["/events", "/events-by-date"] {
                cursors.append(try #require(try Self.okObject(try await service.get("\(path)?since=0"))["cursor"] as? String))
            }
            try await LiveNoticesTests.write(
                ownerURL,
                """
                INSERT INTO event (name, "date", type, remark) VALUES ('Bowser', '2001-02-03', 'vet', 'checkup');
                DELETE FROM event WHERE name = 'Bowser' AND "date" = '1991-10-12';
                """)
            // Each endpoint after the other: the second must not be given the first's delta.
            for (path, cursor, labels) in [("/events", cursors[0], ["name", "date"]), ("/events-by-date", cursors[1], ["date", "name"])] {
                let response = try await service.get("\(path)?since=\(cursor)")
                let delta = try Self.okObject(response)
                let deleted = try #require(delta["deleted"] as? [[String: Any]])
                let remarks = try #require(delta["rows"] as? [[String: Any]]).compactMap { $0["remark"] as? String }
                #expect(remarks.contains("checkup"), "\(path): \(response.text)")
                #expect(deleted.contains { $0["name"] as? String == "Bowser" && $0["date"] != nil }, "\(path): \(response.text)")
                // The keys to forget are written in the endpoint's own key order.
                let text = response.text
                let tombstone = try #require(text.range(of: #""deleted":[{""#))
                #expect(text[tombstone.upperBound...].hasPrefix(labels[0]), "\(path): \(text)")
                if backend == .sqlite { #expect(deleted.count == 1 && remarks == ["checkup"], "\(path): \(text)") }
            }
        }
    }

    @Test("a key of two columns, one a date: rows and tombstones by the whole key, the date written as the rows write it", arguments: PetsAPITests.backends)
    func keyOfTwoColumns(_ backend: SQLDialect) async throws {
        let endpoints = try Self.load(Self.eventsYAML).get()
        try await Self.withSyncedPets(backend, endpoints: endpoints) { service, _, ownerURL in
            let first = try Self.okObject(try await service.get("/events?since=0"))
            let cursor = try #require(first["cursor"] as? String)
            // Bowser's one event, as the rows write its key.
            let kennel = try #require((first["rows"] as? [[String: Any]])?.first { $0["name"] as? String == "Bowser" })
            let kennelKey = ["name": kennel["name"] as Any, "date": kennel["date"] as Any] as NSDictionary
            try await LiveNoticesTests.write(
                ownerURL,
                """
                INSERT INTO event (name, "date", type, remark) VALUES ('Bowser', '2001-02-03', 'vet', 'checkup');
                UPDATE event SET remark = 'moved' WHERE name = 'Fang' AND "date" = '1991-10-12';
                DELETE FROM event WHERE name = 'Bowser' AND "date" = '1991-10-12';
                """)
            let delta = try Self.okObject(try await service.get("/events?since=\(cursor)"))
            let deleted = try #require(delta["deleted"] as? [[String: Any]]).map { $0 as NSDictionary }
            let remarks = Set(try #require(delta["rows"] as? [[String: Any]]).compactMap { $0["remark"] as? String })
            #expect(deleted.contains(kennelKey), "\(deleted) lacks \(kennelKey)")
            #expect(remarks.isSuperset(of: ["checkup", "moved"]), "\(remarks)")
            if backend == .sqlite { #expect(deleted == [kennelKey] && remarks == ["checkup", "moved"]) }
        }
    }
}
