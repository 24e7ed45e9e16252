import Foundation
import SpoutCore
import SpoutDrivers
import SpoutEndpoints
import SpoutHTTP
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Keyset pages, the honest row limit, `ETag`/`If-None-Match` and `Cache-Control`, through real
/// sockets on SQLite and PostgreSQL (docs/endpoints.md, "Pages and caches").
@Suite("Pages and caches")
struct PagesAndCachesTests {
    /// One server per database, all serving the same endpoint set (so the same cursor key).
    struct Services {
        var services: [(name: String, service: InProcessServer)] = []
        var databases: [TemporaryDatabase] = []
        var opened: [Database] = []

        static func start(data: SampleData = .generated(employees: 2_500, seed: 7), endpoints: EndpointSet? = nil) async throws -> Services {
            var result = Services()
            result.databases.append(TestDatabases.makeSQLiteDatabase())
            if TestDatabases.postgresEnabled { result.databases.append(try TestDatabases.makePostgresDatabase(prefix: "spout_t_pages")) }
            var endpoints = try endpoints ?? Repository.shippedEndpoints()
            // The pets' writes need tokens (IdentityAPITests' keys sign them).
            if endpoints.tokenVerifier == nil { endpoints.tokenVerifier = try IdentityAPITests.fixtures.get().verifier() }
            for database in result.databases {
                _ = try await onThread { try data.load(into: database) }
                let opened = try database.open()
                result.opened.append(opened)
                result.services.append((database.url.hasPrefix("sqlite") ? "SQLite" : "PostgreSQL", try await InProcessServer.start(endpoints, database: opened)))
            }
            return result
        }

        /// Runs `body` with started services and stops them afterwards, also when it throws.
        static func with(
            data: SampleData = .generated(employees: 2_500, seed: 7), endpoints: EndpointSet? = nil,
            _ body: (Services) async throws -> Void
        ) async throws {
            let services = try await Self.start(data: data, endpoints: endpoints)
            do {
                try await body(services)
            } catch {
                await services.stop()
                throw error
            }
            await services.stop()
        }

        func stop() async {
            for (_, service) in self.services { await service.stop() }
            self.opened.forEach { $0.close() }
            self.databases.forEach { $0.drop() }
        }
    }

    /// The target of a `Link: <target>; rel="next"` field.
    static func nextLink(_ response: HTTPTestResponse) -> String? {
        guard let link = response.header("link"), link.hasSuffix(#"; rel="next""#), link.hasPrefix("<"),
            let close = link.firstIndex(of: ">")
        else { return nil }
        return String(link[link.index(after: link.startIndex)..<close])
    }

    /// Every page from `path` on, following `Link` until a page has none.
    static func walk(_ service: InProcessServer, from path: String, accept: String? = nil) async throws -> [HTTPTestResponse] {
        var pages: [HTTPTestResponse] = []
        var next: String? = path
        while let target = next {
            let page = try await service.get(target, accept: accept)
            try #require(page.status == 200, "\(target): \(page.status) \(page.text)")
            pages.append(page)
            next = Self.nextLink(page)
            try #require(pages.count <= 1_000, "no last page")
        }
        return pages
    }

    @Test("walking every page with pageSize=7 gives the unpaged result, in order, with details, as JSON, JSON Lines and CSV")
    func walkingPages() async throws {
        try await Services.with { services in
            var pageBodies: [String: [[UInt8]]] = [:]
            for (name, service) in services.services {
                // The most common last name has several pages of 7.
                let all = try #require(try await service.get("/employees").json() as? [[String: Any]])
                let counts = Dictionary(grouping: all.compactMap { $0["lastName"] as? String }, by: { $0 }).mapValues(\.count)
                let lastName = try #require(counts.max { $0.value < $1.value }?.key)
                let expectedPages = (counts[lastName]! + 6) / 7
                try #require(counts[lastName]! > 14)
                let filter = "lastName=\(RawHTTP.formEncode(lastName))"

                for (query, accept) in [
                    ("\(filter)&details=titles&details=salaries", nil), ("\(filter)&details=titles", "application/x-ndjson"),
                    (filter, "text/csv"), ("\(filter)&details=salaries", nil),
                ] as [(String, String?)] {
                    let whole = try await service.get("/employees?\(query)", accept: accept)
                    #expect(whole.header("link") == nil)
                    let pages = try await Self.walk(service, from: "/employees?\(query)&pageSize=7", accept: accept)
                    #expect(pages.count == expectedPages, "\(name) \(query)")
                    #expect(Self.nextLink(pages.last!) == nil)
                    #expect(pages.allSatisfy { $0.header("etag")?.hasPrefix("\"") == true })
                    switch accept {
                    case nil:
                        let rows = try pages.flatMap { try #require($0.json() as? [Any]) }
                        #expect(rows as NSArray == (try whole.json() as! [Any]) as NSArray, "\(name) \(query)")
                        #expect(rows.count == counts[lastName])
                    case "application/x-ndjson":
                        #expect(pages.map(\.text).joined() == whole.text, "\(name) \(query)")
                    default:
                        // Each CSV page has the header line; the rows concatenate.
                        let header = whole.text.prefix { $0 != "\r\n" }
                        let rows = pages.map { String($0.text.dropFirst(header.count + 1)) }.joined()  // "\r\n" is one Character
                        #expect(pages.allSatisfy { $0.text.hasPrefix(header + "\r\n") })
                        #expect(header + "\r\n" + rows == whole.text, "\(name) \(query)")
                    }
                    pageBodies["\(query) \(accept ?? "")", default: []].append(contentsOf: pages.map(\.body))
                }

                // A department's members, paged with details: the same rows as unpaged.
                let members = try await service.get("/departments/d005/employees?details=titles")
                let memberPages = try await Self.walk(service, from: "/departments/d005/employees?details=titles&pageSize=100")
                let memberRows = try memberPages.flatMap { try #require($0.json() as? [Any]) }
                #expect(memberRows as NSArray == (try members.json() as! [Any]) as NSArray)
                #expect(memberPages.count > 1)
            }
            if services.services.count == 2 {
                // Same cursors, same pages: PostgreSQL and SQLite answer the same bytes.
                for (query, bodies) in pageBodies {
                    #expect(Array(bodies.prefix(bodies.count / 2)) == Array(bodies.suffix(bodies.count / 2)), "\(query)")
                }
            }
        }
    }

    @Test("a changed, truncated or foreign cursor and a page size out of range are 400s naming the parameter")
    func refusedCursors() async throws {
        try await Services.with(data: .fixture) { services in
            for (name, service) in services.services {
                let first = try await service.get("/employees?pageSize=3")
                let next = try #require(Self.nextLink(first), "\(name)")
                let cursor = String(next[next.range(of: "after=")!.upperBound...])
                #expect(try await service.get(next).status == 200)

                var changed = Array(cursor)
                changed[4] = changed[4] == "A" ? "B" : "A"
                let foreign = "/employees?lastName=Koblick&pageSize=3&after=\(cursor)"
                let otherEndpoint = "/departments/d005/employees?pageSize=3&after=\(cursor)"
                for path in [
                    "/employees?pageSize=3&after=\(String(changed))", "/employees?pageSize=3&after=\(cursor.dropLast(2))",
                    "/employees?pageSize=3&after=not-a-cursor", "/employees?after=%27%3B%20DROP%20TABLE%20employees",
                    foreign, otherEndpoint,
                ] {
                    let response = try await service.get(path)
                    #expect(response.status == 400, "\(name) \(path)")
                    let body = try #require(try response.json() as? [String: Any])
                    #expect(body["parameter"] as? String == "after", "\(name) \(path)")
                }
                for size in ["0", "1001", "-1"] {
                    let response = try await service.get("/employees?pageSize=\(size)")
                    #expect(response.status == 400)
                    #expect(response.text.contains(#""parameter":"pageSize""#), "\(response.text)")
                }
                // A different page size (and details) may continue the same walk.
                #expect(try await service.get("/employees?pageSize=5&details=titles&after=\(cursor)").status == 200)
            }
        }
    }

    @Test("a cut by rowLimit is visible: Spout-Truncated in the header of a result sent whole, in the trailer of a stream")
    func honestRowLimit() async throws {
        let directory = try TemporaryDirectory()
        try directory.write("config/spout.yaml", "endpoints: [api/*.yaml]\nsqlDirectory: ../sql\n")
        try directory.write("config/api/limited.yaml", """
            paths:
              /limited/employees:
                get:
                  sql: SELECT emp_no AS "employeeNumber", last_name AS "lastName" FROM employees WHERE (CAST(:lastName AS text) IS NULL OR last_name = :lastName) ORDER BY emp_no
                  parameters: {lastName: {}}
                  rowLimit: 3
              /limited/salaries:
                get:
                  sql: SELECT emp_no AS "employeeNumber", salary FROM salaries ORDER BY emp_no, from_date
                  rowLimit: 20000
            """)
        let configuration = try SpoutConfiguration.load(
            file: (directory.path as NSString).appendingPathComponent("config/spout.yaml"), environment: [:])
        let endpoints = try EndpointSet.load(configuration: configuration, environment: [:])
        try await Services.with(endpoints: endpoints) { services in
            for (name, service) in services.services {
                // Small: sent whole, so the field is a header.
                let cut = try await service.get("/limited/employees")
                #expect(try (cut.json() as? [Any])?.count == 3)
                #expect(cut.header("spout-truncated") == "true", "\(name)")
                #expect(cut.header("trailer") == nil)
                let none = try await service.get("/limited/employees?lastName=Nobody")
                #expect(none.text == "[]")
                #expect(none.header("spout-truncated") == "false", "\(name)")
                // Large: streamed, so the field comes after the body, announced in the head.
                let stream = try await service.get("/limited/salaries")
                #expect(stream.header("transfer-encoding") == "chunked")
                #expect(stream.header("trailer") == "Spout-Truncated")
                #expect(stream.trailer("spout-truncated") == "true", "\(name)")
                #expect(try (stream.json() as? [Any])?.count == 20_000)
            }
        }
    }

    @Test("If-None-Match: 304 with the current ETag; after a pets write the old ETag gets 200 and the new body")
    func conditionalRequests() async throws {
        try await Services.with(data: .fixture) { services in
            for (name, service) in services.services {
                let port = service.port
                func get(_ path: String, _ headers: [(String, String)] = []) async throws -> HTTPTestResponse {
                    try await RawHTTP.get(port: port, path, headers: headers)
                }
                // An object: a strong tag, a digest of the body.
                let fluffy = try await get("/pets/Fluffy")
                let fluffyTag = try #require(fluffy.header("etag"), "\(name)")
                #expect(fluffyTag.hasPrefix("\"") && fluffyTag.count == 34)
                let unchanged = try await get("/pets/Fluffy", [("If-None-Match", fluffyTag)])
                #expect(unchanged.status == 304)
                #expect(unchanged.body.isEmpty)
                #expect(unchanged.header("etag") == fluffyTag)
                #expect(try await get("/pets/Fluffy", [("If-None-Match", "\"other\", \(fluffyTag)")]).status == 304)
                #expect(try await get("/pets/Fluffy", [("If-None-Match", "*")]).status == 304)
                #expect(try await get("/pets/Fluffy", [("If-None-Match", "\"other\"")]).status == 200)

                // A stream with versionSql: a weak tag, checked before the rows are read.
                let pets = try await get("/pets")
                let petsTag = try #require(pets.header("etag"), "\(name)")
                #expect(petsTag.hasPrefix("W/\""))
                #expect(try await get("/pets", [("If-None-Match", petsTag)]).status == 304)
                // Another format is another representation.
                let csvTag = try await get("/pets", [("Accept", "text/csv")]).header("etag")
                #expect(csvTag != nil && csvTag != petsTag)

                // A write changes what it touches.
                let harold = try await IdentityAPITests.token("Harold")
                let update = try await IdentityAPITests.send(service, "POST", "/pets/Fluffy", token: harold, form: [("owner", "Gwendolyn")])
                #expect(update.status == 200)
                let after = try await get("/pets/Fluffy", [("If-None-Match", fluffyTag)])
                #expect(after.status == 200)
                #expect(after.text.contains("Gwendolyn"))
                #expect(after.header("etag") != fluffyTag)
                let petsAfter = try await get("/pets", [("If-None-Match", petsTag)])
                #expect(petsAfter.status == 200)
                #expect(petsAfter.header("etag") != petsTag)
                let created = try await IdentityAPITests.send(service, "POST", "/pets", token: harold, form: [("name", "Tag\(name)"), ("species", "cat")])
                #expect(created.status == 201)
                let petsCreated = try await get("/pets", [("If-None-Match", try #require(petsAfter.header("etag")))])
                #expect(petsCreated.status == 200)
                #expect(petsCreated.text.contains("Tag\(name)"))

                // A page is sent whole and tagged; each coding's representation gets a tag of
                // its own, and its bytes decode to the plain page.
                let page = try await get("/employees?pageSize=2")
                let pageTag = try #require(page.header("etag"))
                #expect(try await get("/employees?pageSize=2", [("If-None-Match", pageTag)]).status == 304)
                for (coding, decode) in [("zstd", unzstd), ("gzip", gunzip), ("deflate", inflate)] as [(String, ([UInt8]) throws -> [UInt8])] {
                    let encoded = try await get("/employees?pageSize=2", [("Accept-Encoding", coding)])
                    #expect(encoded.header("content-encoding") == coding)
                    #expect(encoded.header("content-length") == String(encoded.body.count))
                    #expect(try decode(encoded.body) == page.body)
                    #expect(encoded.header("etag") == String(pageTag.dropLast()) + "-\(coding)\"")
                    // The 304 repeats the tag its 200 carried (RFC 9110 §15.4.5).
                    let revalidated = try await get("/employees?pageSize=2", [("Accept-Encoding", coding), ("If-None-Match", encoded.header("etag")!)])
                    #expect(revalidated.status == 304 && revalidated.header("etag") == encoded.header("etag"))
                }
                // A client that kept the plain page's tag but now accepts a coding: still 304.
                #expect(try await get("/employees?pageSize=2", [("Accept-Encoding", "gzip"), ("If-None-Match", pageTag)]).status == 304)
                let preferred = try await get("/employees?pageSize=2", [("Accept-Encoding", "gzip, deflate;q=0.9, br")])
                #expect(preferred.header("content-encoding") == "gzip")
                // HEAD: the identity head, whose length is the plain body's.
                let head = try await RawHTTP.get(port: port, "/employees?pageSize=2", method: "HEAD", headers: [("Accept-Encoding", "gzip")])
                #expect(head.status == 200 && head.header("content-encoding") == nil)
                #expect(head.header("content-length") == String(page.body.count))
                // Too small to gain from a coding's frame: sent as it is to every client.
                let tiny = try await get("/health", [("Accept-Encoding", "zstd")])
                #expect(tiny.body.count < ContentCoding.minimumWholeBody)
                #expect(tiny.header("content-encoding") == nil && tiny.header("vary") == nil)

                // A versioned stream compressed by its producer: one tag per coding, each
                // confirmed by a 304 (weak comparison ignores the mark).
                let plainPets = try await get("/pets")
                let plainTag = try #require(plainPets.header("etag"))
                for coding in ["zstd", "gzip"] {
                    let encoded = try await get("/pets", [("Accept-Encoding", coding)])
                    #expect(encoded.header("content-encoding") == coding)
                    #expect(encoded.header("etag") == String(plainTag.dropLast()) + "-\(coding)\"")
                    let revalidated = try await get("/pets", [("Accept-Encoding", coding), ("If-None-Match", encoded.header("etag")!)])
                    #expect(revalidated.status == 304 && revalidated.header("etag") == encoded.header("etag"))
                }
            }
        }
    }

    @Test("Cache-Control from the endpoint's cache key, Vary on reads")
    func cacheControl() async throws {
        try await Services.with(data: .fixture) { services in
            for (_, service) in services.services {
                let departments = try await service.get("/departments")
                #expect(departments.header("cache-control") == "public, max-age=3600")
                #expect(departments.header("vary")?.contains("Accept, Accept-Encoding") == true)
                let employees = try await service.get("/employees?lastName=Koblick")
                #expect(employees.header("cache-control") == nil)
                #expect(employees.header("vary")?.contains("Accept") == true)
            }
        }
    }
}
