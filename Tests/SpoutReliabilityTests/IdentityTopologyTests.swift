import Foundation
import SpoutCore
import SpoutTestSupport
import Testing

/// Identity where PostgreSQL users deploy it: behind Debian's PgBouncer in transaction mode
/// (`preparedStatements: false`) and on a streaming replica, with Spout logged in as an
/// ordinary role (superusers bypass row-level security) that switches to the token's role.
///
/// Each request's role and claims are `SET LOCAL` in its own transaction; behind a transaction
/// pooler consecutive transactions of one Spout connection land on different server
/// connections, and the other way round, so a role or claim that outlived its transaction would
/// show up in another request's answer here.
@Suite("Identity behind PgBouncer and on a replica", .serialized)
struct IdentityTopologyTests {
    static let login = "spout_login"
    static let userRole = "app_user"
    static let anonymousRole = "app_anon"

    /// Roles, a `note` table with a row-level security policy by the claims' `sub`, and grants;
    /// run as the superuser on the primary after the sample data.
    static let setup = """
        CREATE ROLE spout_login LOGIN;
        CREATE ROLE app_user NOLOGIN;
        CREATE ROLE app_anon NOLOGIN;
        GRANT app_user, app_anon TO spout_login;
        CREATE TABLE note (id integer PRIMARY KEY, owner text NOT NULL, body text NOT NULL);
        INSERT INTO note VALUES (1, 'Ann', 'first of Ann''s'), (2, 'Bob', 'Bob''s only'), (3, 'Ann', 'second of Ann''s');
        ALTER TABLE note ENABLE ROW LEVEL SECURITY;
        CREATE POLICY note_owner ON note FOR SELECT
            USING (owner = nullif(current_setting('request.jwt.claims', true), '')::json ->> 'sub');
        GRANT SELECT ON ALL TABLES IN SCHEMA public TO spout_login, app_anon;
        GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO app_user;
        GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO app_user;
        """

    /// Token-covered reads (anonymous callers allowed) that show who the database thinks asks.
    static let endpoints = """
        auth:
          token: jwt
          anonymous: true
        paths:
          /whoami:
            get:
              description: The role and claims the request's transaction runs with.
              sql: >-
                SELECT CAST(current_user AS text) AS role, CAST(:claims.sub AS text) AS sub,
                nullif(current_setting('request.jwt.claims', true), '') AS claims, pg_is_in_recovery() AS replica
              result: object
          /notes:
            get:
              description: The caller's notes (row-level security), streamed or paged.
              sql: SELECT id, owner, body, pg_is_in_recovery() AS replica FROM note ORDER BY id
              page: {key: [id], size: 1, maxSize: 10}
          /whoami/many:
            get:
              description: 20,000 rows, each naming the role and subject it was read as (about 1 MB).
              sql: >-
                SELECT g AS n, CAST(current_user AS text) AS role, CAST(:claims.sub AS text) AS sub
                FROM generate_series(1, 20000) g
          /whoami/more:
            get:
              description: The same, 400,000 rows (about 18 MB).
              sql: >-
                SELECT g AS n, CAST(current_user AS text) AS role, CAST(:claims.sub AS text) AS sub
                FROM generate_series(1, 400000) g

        """

    static let environment = [
        "SPOUT_IDENTITY_ROLES": "app_user,app_anon", "SPOUT_IDENTITY_DEFAULT_ROLE": "app_user",
        "SPOUT_IDENTITY_ANONYMOUS_ROLE": "app_anon",
    ]

    @Test("behind PgBouncer: RLS by the token's subject, roles from the allow-list, pets by owner, slow streams spooled or held, and no identity outlives its transaction",
          .enabled(if: ThrowawayPostgres.isAvailable && ThrowawayPgBouncer.isAvailable))
    func behindPgBouncer() async throws {
        let cluster = try await onThread { try Self.makeCluster() }
        defer { cluster.remove() }
        let bouncer = try await onThread { try ThrowawayPgBouncer.start(in: cluster, serverConnections: 3, users: [Self.login]) }
        defer { bouncer.remove() }
        let directory = try ServiceDirectory(
            databaseURL: bouncer.url(database: "employees", user: Self.login), extraEndpoints: ["notes.yaml": Self.endpoints], poolSize: 8)
        defer { directory.remove() }
        var environment = Self.environment
        environment["SPOUT_DATABASE_PREPARED_STATEMENTS"] = "false"
        // /whoami/many spools whole; /whoami/more passes the cap and holds its connection.
        environment["SPOUT_SPOOL_MAX_BYTES_PER_STREAM"] = "\(4 << 20)"
        let service = try await ServerProcess.serving(arguments: ["--config", directory.configFile, "--no-seed"], environment: environment)
        do {
            try await Self.checkRowLevelSecurity(service, onReplica: false)
            try await Self.checkPetsByOwner(service)
            try await Self.checkSlowStreams(service)
            #expect(!service.log.contains("prepared statement"))
        } catch {
            await service.stop()
            throw error
        }
        #expect(service.isRunning)
        await service.stop()
    }

    @Test("on a streaming replica: the reads run there with the token's role and claims, and RLS decides what each caller sees",
          .enabled(if: ThrowawayPostgres.isAvailable))
    func onAReplica() async throws {
        let primary = try await onThread { try Self.makeCluster() }
        defer { primary.remove() }
        let replica = try await onThread { try primary.makeReplica() }
        defer { replica.remove() }
        try await onThread {
            let deadline = ContinuousClock.now + .seconds(30)
            while (try? SampleData.column(replica.url(database: "employees"), "SELECT count(*) FROM note"))?.first != "3" {
                guard ContinuousClock.now < deadline else { throw RawSocket.Failure(description: "the replica never got the notes") }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        let directory = try ServiceDirectory(
            databaseURL: primary.url(database: "employees", user: Self.login), extraEndpoints: ["notes.yaml": Self.endpoints], poolSize: 4)
        defer { directory.remove() }
        var environment = Self.environment
        environment["SPOUT_DATABASE_REPLICA_URLS"] = replica.url(database: "employees", user: Self.login)
        let service = try await ServerProcess.serving(arguments: ["--config", directory.configFile, "--no-seed"], environment: environment)
        do {
            try await Self.checkRowLevelSecurity(service, onReplica: true)
            try await Self.checkInterleavedIdentities(service)
            // Writes still go to the primary, as their owner.
            try await Self.checkPetsByOwner(service)
        } catch {
            await service.stop()
            throw error
        }
        #expect(service.isRunning)
        await service.stop()
    }

    /// A cluster with the sample data and ``setup`` in database `employees`.
    static func makeCluster() throws -> ThrowawayPostgres {
        let cluster = try ThrowawayPostgres.create()
        do {
            try cluster.psql("CREATE DATABASE employees")
            try SampleData.seed(cluster.url(database: "employees"), employees: 20)
            try cluster.psql(Self.setup, database: "employees")
        } catch {
            cluster.remove()
            throw error
        }
        return cluster
    }

    // MARK: Checks

    /// Ann, Bob and an anonymous caller see their own notes, streamed and paged; the role and
    /// claims are the token's; a role outside the allow-list is 403.
    static func checkRowLevelSecurity(_ service: ServerProcess, onReplica: Bool) async throws {
        let ann = try await TestTokens.authorization(sub: "Ann")
        let bob = try await TestTokens.authorization(sub: "Bob", role: Self.userRole)
        let replica = onReplica ? "true" : "false"

        let annWho = try await service.get("/whoami", headers: [ann])
        #expect(annWho.status == 200)
        #expect(annWho.text.hasPrefix(#"{"role":"app_user","sub":"Ann","claims":"{"#), "\(annWho.text)")
        #expect(annWho.text.contains(#"\"sub\":\"Ann\""#) && annWho.text.hasSuffix(#""replica":\#(replica)}"#), "\(annWho.text)")
        let anonymous = try await service.get("/whoami")
        #expect(anonymous.text == #"{"role":"app_anon","sub":null,"claims":"{}","replica":\#(replica)}"#, "\(anonymous.text)")

        let annNotes = try await service.get("/notes", headers: [ann])
        #expect(annNotes.text == #"[{"id":1,"owner":"Ann","body":"first of Ann's","replica":\#(replica)},{"id":3,"owner":"Ann","body":"second of Ann's","replica":\#(replica)}]"#,
                "\(annNotes.text)")
        #expect(annNotes.header("cache-control") == "private")
        let bobNotes = try await service.get("/notes", headers: [bob])
        #expect(bobNotes.text == #"[{"id":2,"owner":"Bob","body":"Bob's only","replica":\#(replica)}]"#, "\(bobNotes.text)")
        #expect(try await service.get("/notes").text == "[]")

        // Pages: Ann's first note, a link to the next, then her second; nothing of Bob's.
        let first = try await service.get("/notes?pageSize=1", headers: [ann])
        #expect(first.text == #"[{"id":1,"owner":"Ann","body":"first of Ann's","replica":\#(replica)}]"#, "\(first.text)")
        let link = try #require(first.header("link"))
        let next = try #require(link.split(separator: "<").first?.split(separator: ">").first.map(String.init))
        let second = try await service.get(next, headers: [ann])
        #expect(second.text == #"[{"id":3,"owner":"Ann","body":"second of Ann's","replica":\#(replica)}]"#, "\(second.text)")

        // A role outside identity.roles: 403 before any SQL.
        let admin = try await TestTokens.authorization(sub: "Mallory", role: "postgres")
        let refused = try await service.get("/whoami", headers: [admin])
        #expect(refused.status == 403 && refused.text == #"{"error":"role 'postgres' is not allowed (identity.roles)"}"#, "\(refused.text)")
    }

    /// Owner, another user and an anonymous caller on every pets method.
    static func checkPetsByOwner(_ service: ServerProcess) async throws {
        let ann = try await TestTokens.authorization(sub: "Ann")
        let bob = try await TestTokens.authorization(sub: "Bob")
        let pet = #"{"name":"Inky","species":"octopus","sex":"f","birth":"2022-02-22"}"#
        #expect(try await RawHTTP.postJSON(port: service.port, "/pets", pet).status == 401)
        let created = try await RawHTTP.postJSON(port: service.port, "/pets", pet, headers: [ann])
        #expect(created.status == 201 && created.text.contains(#""owner":"Ann""#), "\(created.text)")
        #expect(try await RawHTTP.postJSON(port: service.port, "/pets/Inky", #"{"sex":"m"}"#, headers: [bob]).status == 404)
        #expect(try await RawHTTP.send(port: service.port, RawHTTP.request("DELETE", "/pets/Inky", headers: [bob])).status == 404)
        #expect(try await RawHTTP.send(port: service.port, RawHTTP.request("DELETE", "/pets/Inky")).status == 401)
        let changed = try await RawHTTP.postJSON(port: service.port, "/pets/Inky", #"{"sex":"m"}"#, headers: [ann])
        #expect(changed.status == 200 && changed.text.contains(#""sex":"m""#), "\(changed.text)")
        #expect(try await RawHTTP.send(port: service.port, RawHTTP.request("DELETE", "/pets/Inky", headers: [ann])).status == 204)
    }

    /// Two callers' streams whose clients stop reading: Ann's spools whole and gives its
    /// connection back, Bob's passes the spool's cap and holds its connection, in its
    /// transaction, while others are served with their own identities. Then both read: every
    /// row was read as its own caller, and nothing of theirs is left on the connections.
    static func checkSlowStreams(_ service: ServerProcess) async throws {
        let ann = try await TestTokens.authorization(sub: "Ann")
        let bob = try await TestTokens.authorization(sub: "Bob")
        let spooled = try await SlowDownloadsTests.stalledDownload(service, path: "/whoami/many", headers: [ann])
        #expect(try await eventually(within: .seconds(60)) { try SlowDownloadsTests.metric(service, "spout_pool_connections_in_use") == 0 },
                "the spooled stream still holds its connection")
        let held = try await SlowDownloadsTests.stalledDownload(service, path: "/whoami/more", headers: [bob])
        #expect(try await eventually(within: .seconds(60)) { try SlowDownloadsTests.metric(service, "spout_streams_held_total") ?? 0 >= 1 },
                "the large stream never held its connection")
        #expect(try SlowDownloadsTests.metric(service, "spout_pool_connections_in_use") == 1)

        try await Self.checkInterleavedIdentities(service)

        for (box, subject, rows) in [(spooled, "Ann", 20_000), (held, "Bob", 400_000)] {
            let response = try await onThread {
                try box.socket.receiveUntilClosed()
                return try RawHTTP.parse(box.socket.received)
            }
            #expect(response.status == 200 && response.isComplete)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [[String: Any]])
            #expect(body.count == rows)
            let others = body.filter { $0["role"] as? String != Self.userRole || $0["sub"] as? String != subject }
            #expect(others.isEmpty, "\(subject)'s stream has \(others.count) rows read as someone else: \(others.prefix(2))")
        }
        let after = try await service.get("/whoami")
        #expect(after.text.hasPrefix(#"{"role":"app_anon","sub":null,"claims":"{}""#), "\(after.text)")
    }

    /// 480 requests from 16 concurrent clients, 24 subjects and anonymous callers interleaved:
    /// each answer names its own request's role and subject.
    static func checkInterleavedIdentities(_ service: ServerProcess) async throws {
        var tokens: [(String, String)?] = [nil]
        for index in 0..<24 { tokens.append(try await TestTokens.authorization(sub: "user-\(index)")) }
        let all = tokens
        let wrong = try await withThrowingTaskGroup(of: [String].self) { group in
            for client in 0..<16 {
                group.addTask {
                    var wrong: [String] = []
                    for round in 0..<30 {
                        let index = (client * 7 + round * 5) % all.count
                        let response = try await service.get("/whoami", headers: all[index].map { [$0] } ?? [])
                        let expected = index == 0 ? #""role":"app_anon","sub":null,"# : #""role":"app_user","sub":"user-\#(index - 1)","#
                        if response.status != 200 || !response.text.contains(expected) { wrong.append(response.text) }
                    }
                    return wrong
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(wrong.isEmpty, "\(wrong.count) answers named another identity: \(wrong.prefix(3))")
    }
}
