import Foundation
import SpoutTestSupport
import Testing

/// Runs `Benchmarks/run --quick` (small data, 2-second runs) with the spout executable built
/// next to the tests and checks that its JSON holds every scenario with numbers. Nothing here
/// judges speed: the point is that the harness keeps working as the service changes.
///
/// `Benchmarks/run` is a Python program, started directly (its `#!/usr/bin/env python3`).
/// Runs when `wrk` is installed, and always under `CI=true` (scripts/test installs the tools it
/// needs: wrk, psql, sqlite3, curl). It runs the harness with `--no-install`: a test installs
/// nothing; a missing tool fails it.
@Suite struct BenchmarkHarnessTests {
    static var root: URL { TestFixtures.repositoryRoot }

    static var enabled: Bool {
        if ProcessInfo.processInfo.environment["CI"] == "true" { return true }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").contains { directory in
            FileManager.default.isExecutableFile(atPath: "\(directory)/wrk")
        }
    }

    /// The JSON object at `path` (keys separated by dots) in `document`.
    static func object(_ document: [String: Any], _ path: String) throws -> [String: Any] {
        var current: Any = document
        for key in path.split(separator: ".") {
            current = try #require((current as? [String: Any])?[String(key)], "missing \(path)")
        }
        return try #require(current as? [String: Any], "\(path) is not an object")
    }

    /// The number under `key` of `object`.
    static func number(_ object: [String: Any], _ key: String) throws -> Double {
        let value = try #require(object[key], "missing \(key)")
        return try #require((value as? NSNumber)?.doubleValue, "\(key) is not a number: \(value)")
    }

    @Test(.enabled(if: BenchmarkHarnessTests.enabled, "needs wrk (or CI=true)"))
    func quickRunWritesEveryScenario() async throws {
        let results = FileManager.default.temporaryDirectory.appendingPathComponent("spout-bench-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: results) }
        let run = try await ChildProcess.run(
            executable: Self.root.appendingPathComponent("Benchmarks/run").path,
            arguments: [
                "--quick", "--no-install",
                "--binary", try ChildProcess.spoutExecutable(),
                "--results", results.path,
            ]
        )
        try #require(run.status == 0, "Benchmarks/run --quick failed:\n\(run.standardError)")
        #expect(run.standardOutput.contains("targets:"))

        let data = try Data(contentsOf: results.appendingPathComponent("latest.json"))
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(document["quick"] as? Bool == true)

        // Loads: Spout and \copy loaded the same rows.
        let load = try Self.object(document, "load.postgres")
        #expect(try Self.number(load, "spout_seconds") > 0)
        #expect(try Self.number(load, "copy_seconds") > 0)
        #expect(try Self.number(load, "rows") == Self.number(load, "copy_rows"))
        #expect(try Self.number(Self.object(document, "load.sqlite"), "rows") == Self.number(load, "rows"))

        // Detail: wrk against both databases, pgbench on PostgreSQL, no failed request.
        for database in ["postgres", "sqlite"] {
            let spout = try Self.object(document, "detail.\(database).spout")
            #expect(try Self.number(spout, "requests_per_second") > 0, "\(database)")
            #expect(try Self.number(spout, "latency_p99_ms") > 0, "\(database)")
            #expect(try Self.number(spout, "errors") == 0, "\(database)")
        }
        let pgbench = try Self.object(document, "detail.postgres.pgbench")
        #expect(try Self.number(pgbench, "tps") > 0)
        #expect(try Self.number(pgbench, "failed") == 0)
        #expect(try Self.number(Self.object(document, "detail.postgres"), "ratio_spout_to_pgbench") > 0)

        // Stream: every row arrived, with a peak RSS; COPY on PostgreSQL; zstd and gzip, each
        // against the plain download of its pair.
        for database in ["postgres", "sqlite"] {
            let spout = try Self.object(document, "stream.\(database).spout")
            #expect(spout["statuses"] as? [Int] == [200], "\(database)")
            #expect(try Self.number(spout, "bytes") > 0, "\(database)")
            #expect(try Self.number(spout, "seconds") > 0, "\(database)")
            #expect(try Self.number(spout, "peak_rss_mib") > 0, "\(database)")
            for coding in ["zstd", "gzip"] {
                let encoded = try Self.object(document, "stream.\(database).\(coding)")
                #expect(encoded["statuses"] as? [Int] == [200], "\(database) \(coding)")
                #expect(encoded["content_encoding"] as? String == coding, "\(database)")
                #expect(try Self.number(encoded, "bytes") > 0, "\(database) \(coding)")
                #expect(try Self.number(encoded, "ratio_to_plain") > 0, "\(database) \(coding)")
            }
        }
        #expect(try Self.number(Self.object(document, "stream.postgres.copy"), "seconds") > 0)
        #expect(try Self.number(Self.object(document, "stream.postgres"), "ratio_spout_to_copy") > 0)
        #expect(try Self.number(Self.object(document, "stream.postgres.spout"), "ttfb_seconds") > 0)

        // SQLite stream against the sqlite3 shell printing the same query as JSON.
        #expect(try Self.number(Self.object(document, "stream.sqlite.sqlite3"), "seconds") > 0)
        #expect(try Self.number(Self.object(document, "stream.sqlite"), "ratio_spout_to_sqlite3") > 0)
        for database in ["postgres", "sqlite"] {
            let stream = try Self.object(document, "stream.\(database)")
            let pairs = try #require(stream["pair_ratios"] as? [Double], "\(database)")
            #expect(pairs.count == 1, "\(database)")
            #expect(try Self.number(Self.object(document, "stream.\(database).spout"), "rows") > 0, "\(database)")
        }

        // List with details: parents, and the statements counted in the server log.
        for name in ["last-name", "department"] {
            let list = try Self.object(document, "list.postgres.\(name)")
            #expect(list["statuses"] as? [Int] == [200], "\(name)")
            #expect(try Self.number(list, "parents") > 0, "\(name)")
            #expect(try Self.number(list, "seconds") > 0, "\(name)")
            #expect(try Self.number(list, "statements") >= 1, "\(name)")
        }
        #expect(try Self.number(Self.object(document, "statements.detail"), "statements") >= 1)
        // A page is one statement: its own LIMIT bounds it, so no cursor and no transaction.
        let page = try Self.object(document, "statements.page")
        #expect(try Self.number(page, "statements") == 1)
        #expect(try Self.number(page, "cursor_fetches") == 0)
        #expect(try Self.number(page, "control") == 0)
        // The department list against one COPY of the equivalent JOIN: a JOIN row per title.
        let department = try Self.object(document, "list.postgres.department")
        let join = try Self.object(document, "list.postgres.department.copy_join")
        #expect(try Self.number(join, "seconds") > 0)
        #expect(try Self.number(department, "ratio_spout_to_copy_join") > 0)
        #expect(try Self.number(department, "rows_per_second") > 0)
        #expect(try Self.number(department, "children") == Self.number(join, "rows"))
        #expect(try Self.number(department, "rows") == Self.number(department, "parents") + Self.number(department, "children"))

        // Keyset pages: the first and a deep page (page 20 of 2,000 employees), both 200; on
        // PostgreSQL the plan of the deep page reads the employees' primary key index.
        for database in ["postgres", "sqlite"] {
            let pages = try Self.object(document, "pages.\(database)")
            #expect(pages["statuses"] as? [Int] == [200], "\(database)")
            #expect(try Self.number(pages, "deep_page") == 20, "\(database)")
            #expect(try Self.number(pages, "ratio_deep_to_first") > 0, "\(database)")
        }
        let plans = try Self.object(document, "pages.postgres.plan")
        for mode in ["custom", "generic"] {
            let plan = try #require(plans[mode] as? [String], "\(mode)")
            #expect(plan.contains { $0.contains("Index Scan using employees_pkey") }, "\(mode): \(plan)")
        }

        // CPU per request and per row, Spout's and PostgreSQL's apart (clock ticks: a short
        // stream may round to zero, a 2-second detail run may not).
        let detailCPU = try Self.object(document, "cpu.detail.postgres")
        #expect(try Self.number(detailCPU, "spout_ms_per_request") > 0)
        #expect(try Self.number(detailCPU, "postgres_ms_per_request") > 0)
        #expect(try Self.number(detailCPU, "pgbench_postgres_ms_per_transaction") > 0)
        // The clients' CPU, and Spout's on GET /health (no database), price the whole request.
        #expect(try Self.number(detailCPU, "pgbench_client_ms_per_transaction") > 0)
        #expect(try Self.number(detailCPU, "wrk_ms_per_request") > 0)
        #expect(try Self.number(detailCPU, "http_floor_spout_ms_per_request") > 0)
        #expect(try Self.number(Self.object(document, "detail.postgres.http_floor"), "requests_per_second") > 0)
        #expect(try Self.number(Self.object(document, "cpu.detail.sqlite"), "spout_ms_per_request") > 0)
        let streamCPU = try Self.object(document, "cpu.stream.postgres")
        for key in ["spout_us_per_row", "postgres_us_per_row", "copy_postgres_us_per_row"] {
            #expect(try Self.number(streamCPU, key) >= 0, "\(key)")
        }
        #expect(try Self.number(Self.object(document, "cpu.stream.sqlite"), "sqlite3_us_per_row") >= 0)
        #expect(try Self.number(Self.object(document, "cpu.list.postgres.department"), "spout_us_per_row") >= 0)

        // Memory under load: every fast stream completed.
        let memory = try Self.object(document, "memory.postgres")
        #expect(try Self.number(memory, "peak_rss_mib") > 0)
        #expect(try Self.number(memory, "fast_completed") == Self.number(memory, "streams") - Self.number(memory, "slow_streams"))

        // Every target has a measured value.
        let targets = try #require(document["targets"] as? [[String: Any]])
        #expect(targets.count == 8)
        #expect(Set(targets.compactMap { $0["name"] as? String })
            == ["stream", "ttfb", "stream-rss", "detail", "sqlite-stream", "list-details", "zstd-stream", "gzip-stream"])
        for target in targets {
            #expect(target["value"] is NSNumber, "\(target["name"] ?? "?") has no value")
        }
    }
}
