import Foundation
import SpoutCore
import SpoutTestDatabases
import SpoutTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Details of details at full scale (issue #32): all of department d005 (about 61,000 current
/// employees of 300,024) with every employee's titles and salaries, three levels in one
/// response, from `spout serve` in a child process with the shipped endpoints and the default
/// configuration, on PostgreSQL and SQLite.
///
/// What it proves: the body is the whole tree (every member, title and salary the database
/// holds for the department, in order, parsed as JSON), the server's peak resident memory
/// during the stream stays a small fraction of the body, and the first byte arrives long before
/// the last (the tree is streamed, not built and then sent). Both figures are printed; the
/// times are not asserted beyond that ratio (shared machines are noisy).
@Suite("A three-level stream at full scale")
struct DeepStreamMemoryTests {
    /// The full-scale generated data set (the size of test_db's employees).
    static let employees = 300_024
    static let path = "/departments/d005?details=employees&details=employees.titles&details=employees.salaries"
    /// The most the server may grow while streaming the tree (the body is about 50 MB).
    static let growthLimit = 48 * 1024 * 1024

    @Test("all of d005 with its employees' titles and salaries: the whole tree, in bounded memory, first byte long before the last",
          arguments: [SQLDialect.postgres, .sqlite])
    func departmentTree(dialect: SQLDialect) async throws {
        guard let database = try TestDatabases.make(dialect, prefix: "spout_rel_deep") else { return }
        defer { database.drop() }
        try await Self.load(employees: Self.employees, into: database.url)
        let expected = try await onThread { try Counts.expected(database.url) }
        #expect(expected.members > 50_000, "d005 has only \(expected.members) current members")

        let directory = try ServiceDirectory(databaseURL: database.url)
        defer { directory.remove() }
        let service = try await ServerProcess.serving(arguments: ["--config", directory.configFile, "--no-seed"])
        let body = FileManager.default.temporaryDirectory.appendingPathComponent("spout-deep-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: body) }
        do {
            // Warm up (connections open, statements prepared), then measure from a reset peak.
            #expect(try await RawHTTP.get(port: service.port, "/departments/d005?details=employees").status == 200)
            try "5".write(toFile: "/proc/\(service.pid)/clear_refs", atomically: false, encoding: .utf8)
            let baseline = try #require(service.residentBytes)

            let curl = try await ChildProcess.run(
                executable: "/usr/bin/curl",
                arguments: [
                    "-sS", "-o", body.path, "-w", "%{http_code} %{time_starttransfer} %{time_total}",
                    "http://127.0.0.1:\(service.port)\(Self.path)",
                ])
            let peak = try #require(service.peakResidentBytes)
            #expect(curl.status == 0, "curl: \(curl.standardError)")
            let fields = curl.standardOutput.split(separator: " ")
            #expect(fields.first == "200")
            let firstByte = Double(fields.dropFirst().first ?? "") ?? .nan
            let total = Double(fields.dropFirst(2).first ?? "") ?? .nan

            let bytes = try Data(contentsOf: body)
            let received = try Counts.received(bytes)
            #expect(received == expected, "the streamed tree differs from the database's rows")
            let growth = peak - baseline
            print(
                "DeepStreamMemoryTests: \(dialect): \(received.members) employees, \(received.titles) titles, "
                    + "\(received.salaries) salaries, \(bytes.count) bytes in \(total) s, first byte after \(firstByte) s; "
                    + "server resident \(baseline / 1024 / 1024) MiB before, peak \(peak / 1024 / 1024) MiB while streaming")
            #expect(growth < Self.growthLimit, "the server grew by \(growth / 1024 / 1024) MiB while streaming")
            #expect(growth < bytes.count / 4, "the server grew by \(growth) bytes for a body of \(bytes.count)")
            #expect(firstByte < total / 2, "the first byte came after \(firstByte) s of \(total) s")
        } catch {
            await service.stop()
            throw error
        }
        #expect(service.isRunning)
        await service.stop()
    }

    /// Generates `employees` employees and loads them into the empty database at `url` with
    /// the `spout` executable under test (`spout generate`, `spout load`, `spout load-pets`), as a user would:
    /// under CI the release binary (seconds), else the debug build next to the tests.
    static func load(employees: Int, into url: String) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-deep-data-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let spout = try ChildProcess.spoutExecutable()
        for arguments in [
            ["generate", directory.path, "--employees", String(employees)],
            ["load", directory.path, "--database", url, "--sql-directory", RepositoryPaths.sqlDirectory],
            // The shipped endpoints include the pets, whose SQL the start prepares.
            ["load-pets", "--database", url, "--sql-directory", RepositoryPaths.sqlDirectory],
        ] {
            let run = try await ChildProcess.run(executable: spout, arguments: arguments)
            try #require(run.status == 0, "spout \(arguments[0]) failed: \(run.standardError)")
        }
    }

    /// What the department tree holds: its current members, and their titles and salaries.
    struct Counts: Equatable, Sendable {
        var members: Int
        var titles: Int
        var salaries: Int

        static let members = "FROM dept_emp de WHERE de.dept_no = 'd005' AND de.to_date = '9999-01-01'"

        /// Counted by the database.
        static func expected(_ url: String) throws -> Counts {
            func count(_ sql: String) throws -> Int { Int(try SampleData.column(url, sql).first ?? "") ?? -1 }
            return Counts(
                members: try count("SELECT count(*) \(Self.members)"),
                titles: try count("SELECT count(*) FROM titles t WHERE t.emp_no IN (SELECT de.emp_no \(Self.members))"),
                salaries: try count("SELECT count(*) FROM salaries s WHERE s.emp_no IN (SELECT de.emp_no \(Self.members))"))
        }

        /// Counted in the body, which must parse as the department object with its employees
        /// in employee-number order, each with both arrays.
        static func received(_ body: Data) throws -> Counts {
            let department = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
            #expect(department["departmentNumber"] as? String == "d005")
            let employees = try #require(department["employees"] as? [[String: Any]])
            let numbers = employees.compactMap { $0["employeeNumber"] as? Int }
            #expect(numbers.count == employees.count && zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 })
            var counts = Counts(members: employees.count, titles: 0, salaries: 0)
            for employee in employees {
                let titles = try #require(employee["titles"] as? [Any], "an employee without titles")
                let salaries = try #require(employee["salaries"] as? [Any], "an employee without salaries")
                counts.titles += titles.count
                counts.salaries += salaries.count
            }
            return counts
        }
    }
}
