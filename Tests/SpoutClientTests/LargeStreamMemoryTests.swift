import Foundation
import SpoutCore
import SpoutTestDatabases
import SpoutTestSupport
import Testing

/// 300,000 rows through the client in bounded memory, on SQLite and PostgreSQL.
///
/// The client runs in a child process, `spout-client-example --count`, so its peak resident
/// memory (`VmHWM`, sampled by ``ChildProcess``) is its own. The same program reads 1,000
/// rows first: the difference between the two peaks is what 299,000 more rows cost, and must
/// stay far below the 23 MB body a client that buffers would hold.
@Suite(.serialized) struct LargeStreamMemoryTests {
    /// `GET /client-rows?count=N`: N generated rows shaped like employees, from a recursive
    /// query both databases run.
    static let endpointFiles = [
        "config/endpoints/client-rows.yaml": """
        description: Generated rows for SpoutClient's tests.
        paths:
          /client-rows:
            get:
              description: COUNT generated employee-shaped rows, streamed.
              sql: |
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < CAST(:count AS integer))
                SELECT i AS "employeeNumber", 'First-' || i AS "firstName", 'Last-' || i AS "lastName" FROM n
              parameters:
                - name: count
                  type: integer
                  required: true
        """
    ]

    static let rowCount = 300_000
    /// The most the peak may grow from 1,000 to 300,000 rows.
    static let allowedGrowth = 12 * 1024 * 1024

    /// Streams 1,000 then 300,000 rows through the example and checks the counts and the peaks.
    static func measure(_ server: LiveSpout, database: String) async throws {
        let executable = try ChildProcess.builtExecutable(named: "spout-client-example")
        let base = server.baseURL.absoluteString
        let small = try await ChildProcess.run(executable: executable, arguments: ["--count", base, "/client-rows?count=1000"])
        let large = try await ChildProcess.run(executable: executable, arguments: ["--count", base, "/client-rows?count=\(Self.rowCount)"])
        #expect(small.status == 0, "\(small.standardError)")
        #expect(large.status == 0, "\(large.standardError)")
        #expect(small.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "1000")
        #expect(large.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "\(Self.rowCount)")
        let growth = large.peakResidentBytes - small.peakResidentBytes
        print(
            "SpoutClientTests: \(database): peak resident memory \(small.peakResidentBytes / 1024) KiB for 1,000 rows, "
                + "\(large.peakResidentBytes / 1024) KiB for \(Self.rowCount) rows (growth \(growth / 1024) KiB)")
        #expect(small.peakResidentBytes > 0 && large.peakResidentBytes > 0, "VmHWM could not be read")
        #expect(growth < Self.allowedGrowth, "the client's memory grew by \(growth / 1024) KiB over 299,000 rows")
    }

    @Test("300,000 rows stream through the client in bounded memory", arguments: SQLDialect.allCases)
    func threeHundredThousandRowsInBoundedMemory(_ dialect: SQLDialect) async throws {
        switch dialect {
        case .sqlite:
            try await LiveSpout.with(extraFiles: Self.endpointFiles) { server in
                try await Self.measure(server, database: "SQLite")
            }
        case .postgres:
            guard TestDatabases.postgresEnabled else { return }
            let database = try await onThread { try TestDatabases.makePostgresDatabase(prefix: "spout_client") }
            defer { database.drop() }
            // An empty database: only this suite's endpoint is served (the start prepares the
            // SQL of every endpoint it serves, and the shipped ones need their tables).
            try await LiveSpout.with(
                extraFiles: Self.endpointFiles, environment: ["SPOUT_ENDPOINTS": "endpoints/client-rows.yaml"],
                extraArguments: ["--database", database.url]
            ) { server in
                try await Self.measure(server, database: "PostgreSQL")
            }
        }
    }
}
