import Foundation
import SpoutCore
import SpoutTestDatabases
import SpoutTestSupport
import Testing

/// Thousands of random, malicious and broken requests against `spout serve`.
@Suite("Hostile input")
struct HostileInputTests {
    static let requests = 2_500

    @Test("random and mutated requests never crash the server, never get a 5xx, and change nothing",
          arguments: [SQLDialect.sqlite, .postgres])
    func fuzz(dialect: SQLDialect) async throws {
        guard let database = try TestDatabases.make(dialect, prefix: "spout_rel_fuzz") else { return }
        defer { database.drop() }
        try await onThread { try SampleData.seed(database.url, employees: 300) }
        let before = try await onThread { try Self.fingerprint(database.url) }
        let directory = try ServiceDirectory(databaseURL: database.url, poolSize: 4)
        defer { directory.remove() }
        let server = try await ServerProcess.serving(arguments: ["--config", directory.configFile, "--no-seed"])
        let port = server.port

        let failures = try await onThread {
            var generator = HostileRequests(seed: 0x5EED_0001 &+ UInt64(dialect == .postgres ? 1 : 0))
            var failures: [String] = []
            var statuses: [Int: Int] = [:]
            for index in 0..<Self.requests {
                let request = generator.next()
                let response: HTTPTestResponse?
                do {
                    response = try RawHTTP.exchange(port: port, request.bytes, timeout: 20, halfClose: request.kind == .malformed)
                } catch {
                    failures.append("#\(index) \(request.label): \(error)")
                    continue
                }
                guard let response else {
                    if request.kind == .wellFormed { failures.append("#\(index) \(request.label): no answer") }
                    continue
                }
                statuses[response.status, default: 0] += 1
                if response.status >= 500 {
                    failures.append("#\(index) \(request.label): \(response.status) \(response.text.prefix(200))")
                }
                if response.status >= 400 {
                    if let leak = Self.leakedDetail(in: response.text) {
                        failures.append("#\(index) \(request.label): error body shows '\(leak)': \(response.text.prefix(200))")
                    }
                    if response.header("content-type") == "application/json", response.header("content-encoding") == nil, response.isComplete,
                        response.header("content-length") != nil || response.header("transfer-encoding") != nil,
                        (try? JSONSerialization.jsonObject(with: Data(response.body), options: [.fragmentsAllowed])) == nil
                    {
                        failures.append("#\(index) \(request.label): error body is not JSON: \(response.text.prefix(200))")
                    }
                }
                if failures.count > 20 { break }
            }
            print("hostile input (\(dialect)): statuses \(statuses.sorted { $0.key < $1.key })")
            return failures
        }
        #expect(failures.isEmpty, "\(failures.count) failures:\n\(failures.joined(separator: "\n"))")
        #expect(server.isRunning, "the server died:\n\(server.log.suffix(2_000))")
        #expect(try await RawHTTP.get(port: port, "/health").status == 200)
        #expect(try await RawHTTP.get(port: port, "/pets/Fluffy").status == 200)
        let after = try await onThread { try Self.fingerprint(database.url) }
        #expect(after == before, "the database changed")
        await server.stop()
    }

    /// The pet table row by row and the size of every employees table.
    static func fingerprint(_ url: String) throws -> [String] {
        var lines = try SampleData.petsChecksum(url)
        for table in ["employees", "departments", "dept_emp", "dept_manager", "titles", "salaries"] {
            lines.append("\(table): " + (try SampleData.column(url, "SELECT count(*) FROM \(table)").first ?? "?"))
        }
        return lines
    }

    /// Words of database error messages that must never reach a client.
    static let databaseWords = ["SQLITE", "sqlite3", "syntax error", "ERROR:", "relation \"", "pg_", "DETAIL:", "HINT:", "no such", "libpq", "SQLSTATE"]

    /// A database word in an error body, outside the echo of the caller's own value (`value`,
    /// `parameter`, `allowed`, which may hold the caller's injection strings).
    static func leakedDetail(in body: String) -> String? {
        var text = body
        if let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] {
            text = object.filter { !["value", "parameter", "allowed"].contains($0.key) }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        return self.databaseWords.first { text.localizedCaseInsensitiveContains($0) }
    }
}
