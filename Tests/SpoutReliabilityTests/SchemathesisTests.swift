import Foundation
import SpoutCore
import SpoutTestDatabases
import SpoutTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Schemathesis (property-based API testing from the OpenAPI document) against `spout serve`.
///
/// Needs the Python module: `python3 -m pip install schemathesis` (scripts/test installs it).
/// Without it the test is skipped, except under `CI=true`, where it fails, unless scripts/test
/// reported that pip could not install it (`SPOUT_UNAVAILABLE_TOOLS`; no PyPI access).
@Suite("Schemathesis against the OpenAPI document")
struct SchemathesisTests {
    static let schemathesis = PythonModule(module: "schemathesis", package: "schemathesis")
    static var moduleAvailable: Bool { Self.schemathesis.isAvailable }
    static var required: Bool { Self.schemathesis.isRequired }

    /// What "conforms" means here: no 5xx; status codes, content types, headers and bodies as
    /// the document declares them.
    static let checks = "not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance"

    @Test("no 5xx and every response conforms to /openapi.json",
          .enabled(if: Self.moduleAvailable || Self.required, "python3 module schemathesis missing: python3 -m pip install schemathesis"))
    func conformance() async throws {
        try #require(Self.moduleAvailable, "python3 module schemathesis missing (required under CI=true): python3 -m pip install schemathesis")
        let database = TestDatabases.makeSQLiteDatabase()
        defer { database.drop() }
        try await onThread { try SampleData.seed(database.url, employees: 100) }
        let directory = try ServiceDirectory(databaseURL: database.url, poolSize: 4)
        defer { directory.remove() }
        let server = try await ServerProcess.serving(arguments: ["--config", directory.configFile, "--no-seed"])
        let reports = directory.path + "/schemathesis"
        try FileManager.default.createDirectory(atPath: reports, withIntermediateDirectories: true)

        let result = try await onThread {
            // Run from the temporary directory: schemathesis keeps its example database
            // (.schemathesis/) in the working directory.
            try ChildProcess.run(executable: "/usr/bin/env", arguments: [
                "-C", reports, "python3", "-m", "schemathesis.cli", "run", "http://127.0.0.1:\(server.port)/openapi.json",
                "--checks", Self.checks,
                // Examples, boundary cases and random data per operation; the stateful phase
                // (links between operations) is left out: see docs/reliability.md.
                "--phases", "examples,coverage,fuzzing",
                "--max-examples", "15", "--seed", "20251122", "--workers", "1",
                "--request-timeout", "30", "--report-dir", reports,
            ])
        }
        let output = result.standardOutput + result.standardError
        #expect(result.status == 0, "schemathesis found problems:\n\(output.suffix(6_000))")
        #expect(output.contains("passed"), "\(output.suffix(2_000))")
        #expect(server.isRunning)
        await server.stop()
    }
}
