import Foundation
import SpoutCore
import SpoutDrivers
import SpoutEndpoints
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// Whole reads of many requests pipelined on one shared PostgreSQL connection
/// (``SpoutCore/SharedReaders``), through real sockets: each request keeps its own identity,
/// and one request's error, timeout or departure leaves the others' answers right. Every test
/// checks that reads really went behind others on the connection
/// (``SpoutCore/QueryStatistics/sharedReadsBehindOthersCount``), so none passes without sharing.
@Suite("Shared reads")
struct SharedReadsTests {
    static let probesFile = """
        paths:
          /cast/{value}/{tag}:
            get:
              sql: SELECT CAST(CAST(:value AS text) AS integer) AS n, CAST(:tag AS text) AS tag
              result: object
          /sleep/{ms}/{tag}:
            get:
              sql: SELECT CAST(pg_sleep(CAST(:ms AS integer) / 1000.0) AS text) AS slept, CAST(:tag AS text) AS tag
              result: object
          /ratio/{a}/{b}:
            get:
              sql: SELECT CAST(:a AS integer) / CAST(:b AS integer) AS ratio
              result: object
        """

    /// One shared connection, a pool of one and a statement timeout of 400 ms on an empty
    /// database Spout reaches as an ordinary role, serving `files`; the shared connection is
    /// open before `body` runs.
    static func withService(
        _ files: [String: String],
        _ body: (InProcessServer, Database, IdentityDatabase) async throws -> Void
    ) async throws {
        let store = try IdentityDatabase.make(.postgres) { _ in }
        defer { store.drop() }
        var configuration = DatabaseConfiguration()
        configuration.maximumConnections = 1
        configuration.sharedReaders = 1
        configuration.statementTimeout = .milliseconds(400)
        let database = try store.open(configuration)
        defer { database.close() }
        let (endpoints, directory) = try IdentityAPITests.endpoints(files)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await IdentityAPITests.withService(endpoints, database: database, identity: SpoutConfiguration.Identity()) { service in
            try await Self.waitForSharedConnection(service, database)
            try await body(service, database, store)
        }
    }

    /// Asks until the database's shared connection is open (it opens in the background on
    /// the first read that could share).
    static func waitForSharedConnection(_ service: InProcessServer, _ database: Database) async throws {
        let readers = try #require(database.sharedReaders)
        for _ in 0..<200 where readers.openCount == 0 {
            _ = try await service.get("/cast/1/warm")
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(readers.openCount == 1)
    }

    /// Sends every request of `requests` at once (at most `width` in flight).
    static func concurrently<T: Sendable>(
        _ count: Int, width: Int = 24, _ request: @escaping @Sendable (Int) async throws -> T
    ) async throws -> [T] {
        try await withThrowingTaskGroup(of: (Int, T).self) { group in
            var answers = [T?](repeating: nil, count: count)
            for index in 0..<count {
                group.addTask { (index, try await request(index)) }
                if index >= width, let (done, answer) = try await group.next() { answers[done] = answer }
            }
            for try await (done, answer) in group { answers[done] = answer }
            return answers.map { $0! }
        }
    }

    @Test("many identities interleaved on one shared connection never see each other's role or claims",
          .enabled(if: TestDatabases.postgresEnabled))
    func identitiesStayApart() async throws {
        var configuration = DatabaseConfiguration()
        configuration.maximumConnections = 1
        configuration.sharedReaders = 1
        try await IdentityAPITests.withRoles(configuration, files: ["probes.yaml": Self.probesFile]) { service, database, store in
            try await Self.waitForSharedConnection(service, database)
            let tokens = try await Self.concurrently(40, width: 8) { index in
                try await IdentityAPITests.token("user\(index)", role: index % 2 == 0 ? store.writer : nil)
            }
            let before = database.statistics.sharedReadsBehindOthersCount
            let wrong = try await Self.concurrently(1_500) { index -> String? in
                switch index % 4 {
                case 0, 1:
                    let user = index % 40
                    let answer = try await IdentityAPITests.send(service, "GET", "/whoami", token: tokens[user])
                    let object = try answer.json() as? [String: Any]
                    let role = user % 2 == 0 ? store.writer : store.reader
                    let claims = (object?["claims"] as? String).flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) } as? [String: Any]
                    guard object?["role"] as? String == role, object?["sub"] as? String == "user\(user)",
                        claims?["sub"] as? String == "user\(user)"
                    else { return "\(index): \(answer.status) \(answer.text)" }
                    return nil
                case 2:
                    let answer = try await IdentityAPITests.send(service, "GET", "/whoami", token: nil)
                    return answer.text == #"{"role":"\#(store.anonymous)","claims":"{}","sub":null}"# ? nil : "\(index): \(answer.text)"
                default:
                    let answer = try await IdentityAPITests.send(service, "GET", "/session", token: nil)
                    return answer.text == #"{"role":"\#(store.appRole)","claims":""}"# ? nil : "\(index): \(answer.text)"
                }
            }
            let failures = wrong.compactMap { $0 }
            #expect(failures.count == 0, "\(failures.prefix(5))")
            #expect(database.statistics.sharedReadsBehindOthersCount > before)
        }
    }

    @Test("an error in one read (22P02, 22012) leaves the reads pipelined with it right", .enabled(if: TestDatabases.postgresEnabled))
    func errorsStayAlone() async throws {
        try await Self.withService(["probes.yaml": Self.probesFile]) { service, database, _ in
            let before = database.statistics.sharedReadsBehindOthersCount
            let wrong = try await Self.concurrently(1_200) { index -> String? in
                switch index % 3 {
                case 0:
                    let answer = try await service.get("/cast/x\(index)/t\(index)")
                    return answer.status == 400 && answer.text == #"{"error":"invalid value"}"# ? nil : "\(index): \(answer.status) \(answer.text)"
                case 1:
                    let answer = try await service.get("/ratio/\(index)/0")
                    return answer.status == 400 && answer.text == #"{"error":"invalid value"}"# ? nil : "\(index): \(answer.status) \(answer.text)"
                default:
                    let answer = try await service.get("/cast/\(index)/t\(index)")
                    return answer.status == 200 && answer.text == #"{"n":\#(index),"tag":"t\#(index)"}"# ? nil : "\(index): \(answer.status) \(answer.text)"
                }
            }
            let failures = wrong.compactMap { $0 }
            #expect(failures.count == 0, "\(failures.prefix(5))")
            #expect(database.statistics.sharedReadsBehindOthersCount > before)
        }
    }

    @Test("a read past its statement timeout among pipelined ones times out alone", .enabled(if: TestDatabases.postgresEnabled))
    func timeoutStaysAlone() async throws {
        try await Self.withService(["probes.yaml": Self.probesFile]) { service, database, _ in
            for round in 0..<3 {
                let before = database.statistics.sharedReadsBehindOthersCount
                let answers = try await Self.concurrently(30, width: 30) { index in
                    index == 0 ? try await service.get("/sleep/5000/slow") : try await service.get("/cast/\(index)/r\(round)")
                }
                #expect(answers[0].status == 504)
                #expect(answers[0].text == #"{"error":"statement timeout"}"#)
                for index in 1..<30 {
                    #expect(answers[index].status == 200)
                    #expect(answers[index].text == #"{"n":\#(index),"tag":"r\#(round)"}"#)
                }
                #expect(database.statistics.sharedReadsBehindOthersCount > before)
            }
        }
    }

    @Test("a client that leaves mid-read cancels nothing on the shared connection; the reads behind it are answered",
          .enabled(if: TestDatabases.postgresEnabled))
    func departureCancelsNothing() async throws {
        try await Self.withService(["probes.yaml": Self.probesFile]) { service, database, _ in
            let before = database.statistics.sharedReadsBehindOthersCount
            for round in 0..<3 {
                // The leaving client's read is slow (300 ms, under the timeout): the reads sent
                // behind it wait for it, and must then be answered, not cancelled.
                let leaving = try RawSocket(port: service.port)
                try leaving.send("GET /sleep/300/gone HTTP/1.1\r\nHost: test\r\n\r\n")
                try await Task.sleep(for: .milliseconds(5))
                async let others = Self.concurrently(30, width: 30) { index in try await service.get("/cast/\(index)/c\(round)") }
                try await Task.sleep(for: .milliseconds(20))
                leaving.close(reset: true)
                let answers = try await others
                for (index, answer) in answers.enumerated() {
                    #expect(answer.status == 200)
                    #expect(answer.text == #"{"n":\#(index),"tag":"c\#(round)"}"#)
                }
            }
            #expect(database.statistics.sharedReadsBehindOthersCount > before)
            // The connection goes on after the dropped answers arrived.
            try await Task.sleep(for: .milliseconds(400))
            #expect(try await service.get("/cast/7/after").text == #"{"n":7,"tag":"after"}"#)
            #expect(database.sharedReaders?.openCount == 1)
        }
    }

    @Test("a shared connection whose backend is terminated fails only the reads in flight, and is replaced",
          .enabled(if: TestDatabases.postgresEnabled))
    func lostConnectionIsReplaced() async throws {
        try await Self.withService(["probes.yaml": Self.probesFile]) { service, database, store in
            let shared = database.statistics.sharedReadCount
            let admin = try Drivers.driver(for: store.temporary.url).connect(readOnly: false, statistics: QueryStatistics())
            defer { admin.close() }
            // Every backend of Spout's role: the pool's and the shared connection.
            try admin.executeScript(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '\(store.appRole)' AND pid <> pg_backend_pid()")
            var statuses: [Int] = []
            for _ in 0..<300 {
                let answer = try await service.get("/cast/5/back")
                statuses.append(answer.status)
                if answer.status == 200, database.sharedReaders?.openCount == 1, database.statistics.sharedReadCount > shared + 1 { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(statuses.allSatisfy { $0 == 200 || $0 == 503 }, "\(statuses)")
            #expect(statuses.last == 200)
            #expect(database.sharedReaders?.openCount == 1)
            #expect(database.statistics.sharedReadCount > shared + 1)
        }
    }
}
