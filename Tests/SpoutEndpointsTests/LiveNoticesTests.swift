import Foundation
import Prometheus
import SpoutCore
import SpoutDrivers
import SpoutEndpoints
import SpoutHTTP
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Live notices (issue #62) through real sockets on each database: event streams of syncable
/// endpoints told of the writes that concern them, resumed with `Last-Event-ID`, ended when
/// the token expires, refused when asked wrongly, and read by a browser-style client through
/// CORS.
///
/// Whether a subscriber was wrongly told of a write is seen in its first event's cursor, not in
/// time: a write that concerns only others comes in a batch of changes before a later write of
/// its own, so an event for the first would carry an earlier position than the batch after it.
@Suite("Live notices")
struct LiveNoticesTests {
    /// Runs `sql` on the database at `url` as another client would (autocommit).
    static func write(_ url: String, _ sql: String) async throws {
        try await onThread {
            let connection = try Drivers.driver(for: url).connect(readOnly: false, statistics: QueryStatistics())
            defer { connection.close() }
            try connection.executeScript(sql)
        }
    }

    /// The cursor an event says to sync from (its data's `cursor`).
    static func cursor(_ event: EventStreamReader.Event) throws -> String {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(event.data.utf8)) as? [String: Any], "\(event.data)")
        return try #require(object["cursor"] as? String)
    }

    /// The change log position a sync cursor holds: its text is readable (sealed, not
    /// encrypted: docs/endpoints.md), a version byte, a key id, an integer tagged `i`, a MAC.
    static func position(_ cursor: String) throws -> Int64 {
        var text = cursor.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        let bytes = try #require(Data(base64Encoded: text).map(Array.init), "\(cursor)")
        try #require(bytes.count == 30 && bytes[5] == UInt8(ascii: "i"), "\(bytes)")
        return bytes[6..<14].reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }

    /// The next event of `stream`, which must be a change event with an id.
    static func change(_ stream: EventStreamReader) async throws -> (id: String, from: String) {
        let event = try #require(try await stream.next(), "the stream ended")
        #expect(event.name == "change")
        return (try #require(event.id), try Self.cursor(event))
    }

    @Test("a write reaches the subscribers whose result it concerns and not the others; one group's subscribers all hear it", arguments: PetsAPITests.backends)
    func concerned(_ backend: SQLDialect) async throws {
        try await SyncReadTests.withSyncedPets(backend) { service, _, ownerURL in
            let diane = try await EventStreamReader.open(port: service.port, "/pets?owner=Diane")
            let dianeWithEvents = try await EventStreamReader.open(port: service.port, "/pets?owner=Diane&details=events")
            let gwen = try await EventStreamReader.open(port: service.port, "/pets?owner=Gwen")
            defer { [diane, dianeWithEvents, gwen].forEach { $0.close() } }
            #expect(diane.status == 200)
            #expect(diane.header("Content-Type") == "text/event-stream")
            #expect(diane.header("Cache-Control") == "no-store")

            // One of Diane's pets changes: both of Diane's subscribers hear it, and syncing from
            // the event's cursor gives the change.
            try await Self.write(ownerURL, "UPDATE pet SET species = 'wolf' WHERE name = 'Bowser'")
            let first = try await Self.change(diane)
            let same = try await Self.change(dianeWithEvents)
            #expect(try Self.position(same.from) == Self.position(first.from))
            let delta = try await SyncReadTests.sync(service, "owner=Diane", since: first.from)
            #expect(delta.rows.map(\.name) == ["Bowser"])

            // Then one of Gwen's: Gwen's first event is that one (it starts where Diane's ended).
            try await Self.write(ownerURL, "UPDATE pet SET species = 'parrot' WHERE name = 'Chirpy'")
            let gwens = try await Self.change(gwen)
            #expect(try Self.position(gwens.from) >= Self.position(first.id))

            // A detail of Diane's pet (an event row) concerns Diane only.
            try await Self.write(ownerURL, "INSERT INTO event (name, \"date\", type, remark) VALUES ('Puffball', '2024-01-01', 'vet', 'checkup')")
            let detail = try await Self.change(diane)
            #expect(try Self.position(detail.from) >= Self.position(gwens.id))
            _ = try await Self.change(dianeWithEvents)

            // A pet given from Diane to Gwen concerns both: Diane held it, Gwen's result has it now.
            try await Self.write(ownerURL, "UPDATE pet SET owner = 'Gwen' WHERE name = 'Puffball'")
            let gave = try await Self.change(diane)
            let got = try await Self.change(gwen)
            #expect(try Self.position(gave.from) >= Self.position(detail.id))
            // Gwen's notice covers the gift; it may start earlier: a group whose keys are still
            // loading is told of every change to its tables, and an unsent notice coalesces
            // with the next (from the oldest `from`).
            #expect(try Self.position(got.from) <= Self.position(gave.from))
            #expect(try Self.position(got.from) >= Self.position(gwens.id))
            // A delta may bring again a row the client already has (on PostgreSQL a cursor is
            // the oldest transaction still running, so a change that ended meanwhile can come
            // twice); what it must bring is the pet Gwen got.
            let gwenDelta = try await SyncReadTests.sync(service, "owner=Gwen", since: got.from)
            let names = gwenDelta.rows.map(\.name)
            #expect(names.contains("Puffball") && Set(names).isSubset(of: ["Puffball", "Chirpy"]), "\(names)")
        }
    }

    /// The value of `spout_notice_evaluation_queries_total` in `registry`.
    static func evaluationQueries(_ registry: PrometheusCollectorRegistry) throws -> Double {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        let line = String(decoding: buffer, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("spout_notice_evaluation_queries_total ") }
        return try #require(line.flatMap { Double($0.split(separator: " ").last ?? "") })
    }

    @Test("groups of one endpoint are asked together: a write among 24 groups costs 24 / 8 statements and reaches only its own", arguments: PetsAPITests.backends)
    func combinedEvaluations(_ backend: SQLDialect) async throws {
        var endpoints = try Repository.shippedEndpoints()
        endpoints.noticeSettings.evaluationsPerStatement = 8
        let registry = PrometheusCollectorRegistry()
        endpoints.noticeMetrics = NoticeMetrics(registry: registry)
        try await SyncReadTests.withSyncedPets(backend, endpoints: endpoints) { service, _, ownerURL in
            var streams: [EventStreamReader] = []
            defer { streams.forEach { $0.close() } }
            for owner in 0..<24 {
                streams.append(try await EventStreamReader.open(port: service.port, "/pets?owner=o\(owner)"))
            }
            #expect(streams.allSatisfy { $0.status == 200 })
            let before = try Self.evaluationQueries(registry)

            // Every group holds no key, so each must be asked whether the new pet is its own now:
            // 24 questions in 3 statements (8 a statement), and only o17 is told. (24 streams:
            // the test server takes 32 connections from one address.)
            try await Self.write(ownerURL, "INSERT INTO pet (name, owner, species, sex) VALUES ('Rex', 'o17', 'dog', 'm')")
            let rex = try await Self.change(streams[17])
            #expect(try Self.evaluationQueries(registry) - before == 3)
            let delta = try await SyncReadTests.sync(service, "owner=o17", since: rex.from)
            #expect(delta.rows.map(\.name) == ["Rex"])

            // o3's first event is of its own pet, after Rex's: it was not told of Rex.
            try await Self.write(ownerURL, "INSERT INTO pet (name, owner, species, sex) VALUES ('Tig', 'o3', 'cat', 'f')")
            let tig = try await Self.change(streams[3])
            #expect(try Self.position(tig.from) >= Self.position(rex.id))
            let tigs = try await SyncReadTests.sync(service, "owner=o3", since: tig.from)
            #expect(tigs.rows.map(\.name) == ["Tig"])
        }
    }

    @Test("a reconnect with Last-Event-ID after writes made while disconnected is told at once, from that event", arguments: PetsAPITests.backends)
    func resumes(_ backend: SQLDialect) async throws {
        try await SyncReadTests.withSyncedPets(backend) { service, _, ownerURL in
            let start = try await SyncReadTests.sync(service, "owner=Diane", since: "0")
            let stream = try await EventStreamReader.open(port: service.port, "/pets?owner=Diane&since=\(start.cursor)")
            try await Self.write(ownerURL, "UPDATE pet SET species = 'wolf' WHERE name = 'Bowser'")
            let seen = try await Self.change(stream)
            stream.close()

            try await Self.write(ownerURL, "UPDATE pet SET species = 'hamster' WHERE name = 'Puffball'")
            // Last-Event-ID wins over since (an EventSource keeps its first URL).
            let again = try await EventStreamReader.open(
                port: service.port, "/pets?owner=Diane&since=\(start.cursor)", headers: [("Last-Event-ID", seen.id)])
            defer { again.close() }
            #expect(again.status == 200)
            // No write follows: this event can only be the catch-up, from the last event's id.
            let resumed = try await Self.change(again)
            #expect(try Self.position(resumed.from) == Self.position(seen.id))
            // A row may come again (see concerned(_:)); the one written meanwhile must.
            let delta = try await SyncReadTests.sync(service, "owner=Diane", since: resumed.from)
            let names = delta.rows.map(\.name)
            #expect(names.contains("Puffball") && Set(names).isSubset(of: ["Puffball", "Bowser"]), "\(names)")
        }
    }

    /// A syncable endpoint whose result is the caller's own pets, by the token's subject.
    static let minePetsYAML = """
        auth:
          token: jwt
          methods: [GET]
          requiredClaims: [sub]
        paths:
          /mine:
            get:
              sql: SELECT name, owner, species FROM pet WHERE owner = :claims.sub ORDER BY name
              sync:
                key: [name]
                tables:
                  pet: [name]
        """

    @Test("subscribers of one endpoint with other identities hear only their own changes; an expired token ends the stream", arguments: PetsAPITests.backends)
    func identities(_ backend: SQLDialect) async throws {
        let endpoints = try SyncReadTests.load(Self.minePetsYAML).get()
        try await SyncReadTests.withSyncedPets(backend, endpoints: endpoints) { service, _, ownerURL in
            let anonymous = try await service.get("/mine", accept: "text/event-stream")
            #expect(anonymous.status == 401)
            let diane = try await EventStreamReader.open(
                port: service.port, "/mine", headers: [("Authorization", "Bearer \(try await IdentityAPITests.token("Diane"))")])
            let gwen = try await EventStreamReader.open(
                port: service.port, "/mine", headers: [("Authorization", "Bearer \(try await IdentityAPITests.token("Gwen"))")])
            defer { [diane, gwen].forEach { $0.close() } }
            #expect(diane.status == 200 && gwen.status == 200)

            try await Self.write(ownerURL, "UPDATE pet SET species = 'parrot' WHERE name = 'Chirpy'")
            let gwens = try await Self.change(gwen)
            try await Self.write(ownerURL, "UPDATE pet SET species = 'wolf' WHERE name = 'Bowser'")
            let dianes = try await Self.change(diane)
            #expect(try Self.position(dianes.from) >= Self.position(gwens.id))

            // A token that expires in two seconds: the stream ends cleanly then (the client
            // reconnects with a fresh token); the socket's timeout only catches a hang.
            let soon = Int64(Date().timeIntervalSince1970) + 2
            let short = try await EventStreamReader.open(
                port: service.port, "/mine",
                headers: [("Authorization", "Bearer \(try await IdentityAPITests.token("Diane", extra: ["exp": .integer(soon)]))")])
            defer { short.close() }
            #expect(short.status == 200)
            _ = try await short.readToEnd()
            #expect(short.endedCleanly)
            #expect(Int64(Date().timeIntervalSince1970) >= soon)
        }
    }

    @Test("an endpoint that is not syncable is 406 naming those that are; a malformed or foreign Last-Event-ID is 400 naming it", arguments: PetsAPITests.backends)
    func refusals(_ backend: SQLDialect) async throws {
        try await SyncReadTests.withSyncedPets(backend) { service, _, _ in
            let object = try await service.get("/pets/Bowser", accept: "text/event-stream")
            #expect(object.status == 406)
            #expect(object.text.contains("GET /pets/{name} is not syncable"), "\(object.text)")
            #expect(object.text.contains("syncable endpoints: GET /pets"), "\(object.text)")

            let garbage = try await service.get("/pets?owner=Diane", headers: [("Last-Event-ID", "not-a-cursor")], accept: "text/event-stream")
            #expect(garbage.status == 400)
            #expect(garbage.text.contains("Last-Event-ID"), "\(garbage.text)")

            let gwens = try await SyncReadTests.sync(service, "owner=Gwen", since: "0")
            let foreign = try await service.get("/pets?owner=Diane", headers: [("Last-Event-ID", gwens.cursor)], accept: "text/event-stream")
            #expect(foreign.status == 400)
            #expect(foreign.text.contains("Last-Event-ID"), "\(foreign.text)")

            // The ordinary reads are as they were.
            #expect(try await service.get("/pets?owner=Diane").status == 200)
        }
    }

    /// A browser's EventSource, as far as the server can tell: `Accept: text/event-stream`,
    /// `Origin`, `Cache-Control: no-cache`, read line by line; it writes a change through the
    /// API with the owner's token, then prints what it saw as JSON and exits.
    static let eventSourceScript = #"""
        import http.client, json, sys, urllib.parse
        port, origin, token = int(sys.argv[1]), sys.argv[2], sys.argv[3]
        stream = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        stream.request("GET", "/pets?owner=Diane", headers={"Accept": "text/event-stream", "Origin": origin, "Cache-Control": "no-cache"})
        response = stream.getresponse()
        seen = {"status": response.status, "allowOrigin": response.getheader("Access-Control-Allow-Origin"),
                "contentType": response.getheader("Content-Type")}
        writer = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        writer.request("POST", "/pets/Bowser", body=urllib.parse.urlencode({"species": "wolf"}),
                       headers={"Authorization": "Bearer " + token, "Content-Type": "application/x-www-form-urlencoded", "Origin": origin})
        seen["writeStatus"] = writer.getresponse().status
        event = {}
        while True:
            line = response.readline().decode()
            if not line:
                break
            line = line.rstrip("\n")
            if line == "":
                if "data" in event:
                    seen["event"] = event
                    break
                event = {}
            elif not line.startswith(":") and ":" in line:
                field, value = line.split(":", 1)
                event[field] = value[1:] if value.startswith(" ") else value
        print(json.dumps(seen))
        """#

    @Test("a browser-style EventSource client receives events through CORS", arguments: PetsAPITests.backends)
    func eventSourceThroughCORS(_ backend: SQLDialect) async throws {
        let origin = "https://app.example.com"
        var configuration = InProcessServer.testConfiguration
        configuration.cors = CORSPolicy(allowedOrigins: [origin])
        try await SyncReadTests.withSyncedPets(backend, configuration: configuration) { service, _, _ in
            let directory = try TemporaryDirectory()
            try directory.write("eventsource.py", Self.eventSourceScript)
            let script = (directory.path as NSString).appendingPathComponent("eventsource.py")
            let token = try await IdentityAPITests.token("Diane")
            let run = try await ChildProcess.run(executable: "/usr/bin/python3", arguments: [script, String(service.port), origin, token])
            #expect(run.status == 0, "\(run.standardError)")
            let seen = try #require(try JSONSerialization.jsonObject(with: Data(run.outputBytes)) as? [String: Any], "\(run.standardOutput)")
            #expect(seen["status"] as? Int == 200)
            #expect(seen["allowOrigin"] as? String == origin)
            #expect(seen["contentType"] as? String == "text/event-stream")
            #expect(seen["writeStatus"] as? Int == 200)
            let event = try #require(seen["event"] as? [String: String])
            #expect(event["event"] == "change")
            #expect(event["id"] != nil)
            #expect(event["data"]?.hasPrefix("{\"cursor\":") == true)
        }
    }
}
