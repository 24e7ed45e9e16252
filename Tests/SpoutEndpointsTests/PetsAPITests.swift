import Foundation
import SpoutCore
import SpoutEndpoints
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// The pets API on a fresh pet table, on each database.
@Suite("Pets API")
struct PetsAPITests {
    /// The databases the pets tests run on: SQLite always, PostgreSQL where a server is (and
    /// under `CI=true`, where a missing one fails the test).
    static var backends: [SQLDialect] { TestDatabases.postgresEnabled ? SQLDialect.allCases : [.sqlite] }

    static func epoch(_ year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        CivilTime.days(year: year, month: month, day: day) * 86_400_000
    }

    /// The pet table as JSON, read directly from the database (not through the API).
    static func table(_ database: Database) async throws -> String {
        try await onThread {
            let sink = CollectingSink()
            try database.query("SELECT name, owner, species, sex, birth, death FROM pet ORDER BY name").write(as: .json(), to: sink)
            return sink.text
        }
    }

    static func withService(_ backend: SQLDialect, _ body: (InProcessServer, Database) async throws -> Void) async throws {
        let temporary = backend == .sqlite ? TestDatabases.makeSQLiteDatabase() : try TestDatabases.makePostgresDatabase(prefix: "spout_t_pets")
        defer { temporary.drop() }
        try await onThread { try SampleData.loadPets(into: temporary) }
        let database = try temporary.open()
        defer { database.close() }
        var endpoints = try Repository.shippedEndpoints()
        endpoints.tokenVerifier = try IdentityAPITests.fixtures.get().verifier()
        try await InProcessServer.serving(endpoints, database: database) { try await body($0, database) }
    }

    @Test("reads: all pets, by owner, one pet, 404", arguments: PetsAPITests.backends)
    func reads(_ backend: SQLDialect) async throws {
        try await Self.withService(backend) { service, _ in
            let gwen = try await service.get("/pets?owner=Gwen")
            #expect(gwen.status == 200)
            #expect(gwen.text == """
                [{"name":"Chirpy","species":"bird","sex":"f","birth":\(Self.epoch(1998, 9, 11))},\
                {"name":"Claws","species":"cat","sex":"m","birth":\(Self.epoch(1994, 3, 17))},\
                {"name":"Whistler","species":"bird","sex":null,"birth":\(Self.epoch(1997, 12, 9))}]
                """)
            let all = try await service.get("/pets")
            let names = try #require(try all.json() as? [[String: Any]]).compactMap { $0["name"] as? String }
            #expect(names == ["Bowser", "Buffy", "Chirpy", "Claws", "Fang", "Fluffy", "Puffball", "Slim", "Whistler"])
            let bowser = try await service.get("/pets/Bowser")
            #expect(bowser.text == """
                {"name":"Bowser","owner":"Diane","species":"dog","sex":"m","birth":\(Self.epoch(1979, 8, 31)),"death":\(Self.epoch(1995, 7, 29))}
                """)
            let missing = try await service.get("/pets/Nobody")
            #expect(missing.status == 404)
            #expect(missing.text == #"{"error":"not found"}"#)
        }
    }

    @Test("owners, their pets and the pets' events: two levels of details, statements per level", arguments: PetsAPITests.backends)
    func ownersPetsAndEvents(_ backend: SQLDialect) async throws {
        try await Self.withService(backend) { service, database in
            let before = database.statistics.statementCount
            let owners = try await service.get("/owners?details=pets&details=pets.events")
            let statements = database.statistics.statementCount - before
            #expect(owners.status == 200)
            let rows = try #require(try owners.json() as? [[String: Any]])
            #expect(rows.compactMap { $0["owner"] as? String } == ["Benny", "Diane", "Gwen", "Harold"])
            #expect(owners.text.contains("""
                {"owner":"Gwen","pets":[{"name":"Chirpy","species":"bird","sex":"f","birth":\(Self.epoch(1998, 9, 11)),"death":null,\
                "events":[{"date":\(Self.epoch(1999, 3, 21)),"type":"vet","remark":"needed beak straightened"}]},\
                {"name":"Claws","species":"cat","sex":"m","birth":\(Self.epoch(1994, 3, 17)),"death":null,\
                "events":[{"date":\(Self.epoch(1998, 3, 17)),"type":"birthday","remark":"Gave him a new flea collar"}]},\
                {"name":"Whistler","species":"bird","sex":null,"birth":\(Self.epoch(1997, 12, 9)),"death":null,\
                "events":[{"date":\(Self.epoch(1998, 12, 9)),"type":"birthday","remark":"First birthday"}]}]}
                """))
            // Each pet's events are what the pet's own endpoint attaches.
            for pet in rows.flatMap({ $0["pets"] as? [[String: Any]] ?? [] }) {
                let name = try #require(pet["name"] as? String)
                let own = try #require(try await service.get("/pets/\(name)?details=events").json() as? [String: Any])
                #expect(own["events"] as? NSArray == pet["events"] as? NSArray, "\(name)")
            }
            #expect(rows.reduce(0) { $0 + (($1["pets"] as? [Any])?.count ?? 0) } == 9)
            // PostgreSQL: the owners, then one statement per level for the one window of
            // parents; SQLite: a cached statement per parent.
            #expect(statements == (backend == .postgres ? 3 : 1 + 4 + 9))
            // Buffy's two litters, in order; Puffball has no events.
            let buffy = try await service.get("/pets/Buffy?details=events")
            #expect(buffy.text.hasSuffix("""
                "events":[{"date":\(Self.epoch(1993, 6, 23)),"type":"litter","remark":"5 puppies, 2 female, 3 male"},\
                {"date":\(Self.epoch(1994, 6, 19)),"type":"litter","remark":"3 puppies, 3 female"}]}
                """))
            #expect(try await service.get("/pets/Puffball?details=events").text.hasSuffix(#""events":[]}"#))
            #expect(try await service.get("/owners?details=pets.events").status == 400)
        }
    }

    @Test("create, duplicate, bad values, partial update, delete", arguments: PetsAPITests.backends)
    func writes(_ backend: SQLDialect) async throws {
        try await Self.withService(backend) { service, database in
            let before = try await Self.table(database)
            let rexRow = """
                {"name":"Rex","owner":"Ann","species":"dog","sex":"m","birth":\(Self.epoch(2020, 2, 29)),"death":null}
                """

            // Writes need a token; the pet's owner is its subject (IdentityAPITests covers who
            // may change what).
            let ann = try await IdentityAPITests.token("Ann")
            let bea = try await IdentityAPITests.token("Bea")
            func form(_ path: String, _ fields: [(String, String)], as token: String) async throws -> HTTPTestResponse {
                try await IdentityAPITests.send(service, "POST", path, token: token, form: fields)
            }
            func json(_ path: String, _ json: String, as token: String) async throws -> HTTPTestResponse {
                try await RawHTTP.get(
                    port: service.port, path, method: "POST",
                    headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(token)")], body: Array(json.utf8))
            }

            // Create from a form.
            let created = try await form("/pets", [("name", "Rex"), ("species", "dog"), ("sex", "m"), ("birth", "2020-02-29")], as: ann)
            #expect(created.status == 201)
            #expect(created.header("location") == "/pets/Rex")
            #expect(created.text == rexRow)
            #expect(try await service.get("/pets/Rex").text == rexRow)

            // Create from JSON; the Location is percent-encoded.
            let whiskers = try await json("/pets", #"{"name":"Mr Whiskers","species":"cat","death":null}"#, as: ann)
            #expect(whiskers.status == 201)
            #expect(whiskers.header("location") == "/pets/Mr%20Whiskers")
            #expect(whiskers.text == #"{"name":"Mr Whiskers","owner":"Ann","species":"cat","sex":null,"birth":null,"death":null}"#)
            #expect(try await service.get("/pets/Mr%20Whiskers").status == 200)

            // A duplicate is 409 and changes nothing.
            let afterCreates = try await Self.table(database)
            let duplicate = try await form("/pets", [("name", "Rex")], as: bea)
            #expect(duplicate.status == 409)
            // Named although PostgreSQL's message leaves the key out under row-level security.
            #expect(duplicate.text == #"{"error":"unique violation","parameter":"name","value":"Rex"}"#)
            #expect(try await Self.table(database) == afterCreates)

            // Bad values are 400 before any database work.
            let badDate = try await form("/pets", [("name", "Odd"), ("birth", "yesterday")], as: ann)
            #expect(badDate.status == 400)
            #expect(badDate.text == #"{"error":"invalid date","parameter":"birth","value":"yesterday"}"#)
            let badSex = try await form("/pets/Rex", [("sex", "x")], as: ann)
            #expect(badSex.status == 400)
            #expect(badSex.text == #"{"error":"value not allowed","parameter":"sex","value":"x","allowed":["f","m"]}"#)
            let noName = try await form("/pets", [("species", "cat")], as: ann)
            #expect(noName.status == 400)
            #expect(noName.text == #"{"error":"missing required parameter","parameter":"name"}"#)
            #expect(try await Self.table(database) == afterCreates)

            // A partial update changes only the fields sent; JSON null leaves a field as is.
            let updated = try await form("/pets/Rex", [("owner", "Bea"), ("death", "2031-01-02")], as: ann)
            #expect(updated.status == 200)
            let updatedRow = """
                {"name":"Rex","owner":"Bea","species":"dog","sex":"m","birth":\(Self.epoch(2020, 2, 29)),"death":\(Self.epoch(2031, 1, 2))}
                """
            #expect(updated.text == updatedRow)
            let unchanged = try await json("/pets/Rex", #"{"death":null,"species":"dog"}"#, as: bea)
            #expect(unchanged.status == 200)
            #expect(unchanged.text == updatedRow)
            #expect(try await service.get("/pets/Rex").text == updatedRow)

            // Updating a missing pet is 404 and creates nothing.
            let missingUpdate = try await form("/pets/Nobody", [("species", "cat")], as: bea)
            #expect(missingUpdate.status == 404)

            // Delete: 204, then 404.
            let deleted = try await IdentityAPITests.send(service, "DELETE", "/pets/Rex", token: bea)
            #expect(deleted.status == 204)
            #expect(deleted.body.isEmpty)
            #expect(try await service.get("/pets/Rex").status == 404)
            let again = try await IdentityAPITests.send(service, "DELETE", "/pets/Rex", token: bea)
            #expect(again.status == 404)
            let whiskersGone = try await IdentityAPITests.send(service, "DELETE", "/pets/Mr%20Whiskers", token: ann)
            #expect(whiskersGone.status == 204)

            // Back to the nine pets, untouched.
            #expect(try await Self.table(database) == before)
        }
    }
}
