import Foundation
import SpoutCore
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Database error text and credentials stay inside the service.
@Suite("No database details or passwords leak")
struct ErrorDisclosureTests {
    static func endpoints(_ dialect: SQLDialect) -> String {
        let lateFailure: String
        switch dialect {
        case .postgres:
            lateFailure = "SELECT g AS id, CASE WHEN g < 100000 THEN g ELSE 1 / (g - g) END AS v FROM (SELECT generate_series(1, 200000) AS g) AS s"
        case .sqlite:
            lateFailure = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000) SELECT x AS id, CASE WHEN x < 100000 THEN 'ok' ELSE json('not json') END AS v FROM c"
        }
        return """
            paths:
              /broken/table:
                get:
                  sql: SELECT name FROM no_such_table_xyzzy
              /broken/column:
                get:
                  sql: SELECT no_such_column_xyzzy FROM pet
              /broken/function:
                get:
                  sql: SELECT no_such_function_xyzzy(1) AS x
                  result: object
              /broken/late:
                get:
                  sql: "\(lateFailure)"

            """
    }

    /// Endpoints whose SQL prepares and fails only when it runs: what a started `spout serve`
    /// can hold, since the start prepares every statement (PostgreSQL).
    static let runtimeFailures = """
        paths:
          /broken/now:
            get:
              sql: SELECT 1 / (count(*) - count(*)) AS x FROM pet
              result: object
          /broken/late:
            get:
              sql: "SELECT g AS id, CASE WHEN g < 100000 THEN g ELSE 1 / (g - g) END AS v FROM (SELECT generate_series(1, 200000) AS g) AS s"

        """

    static let databaseWords = ["xyzzy", "ERROR", "SQLITE", "sqlite3", "syntax", "relation", "column", "function", "does not exist", "no such", "division", "malformed", "JSON"]

    @Test("SQL errors answer a generic 500 body; an error mid-stream truncates the body without details",
          arguments: [SQLDialect.postgres, .sqlite])
    func sqlErrors(dialect: SQLDialect) async throws {
        guard let database = try TestDatabases.make(dialect, prefix: "spout_rel_errors") else { return }
        defer { database.drop() }
        try await onThread { try SampleData.seed(database.url, employees: 10) }
        let directory = try ServiceDirectory(databaseURL: database.url, extraEndpoints: ["broken.yaml": Self.endpoints(dialect)], poolSize: 2)
        defer { directory.remove() }
        let service = try await InProcessServer.start(directory)

        for target in ["/broken/table", "/broken/column", "/broken/function"] {
            let response = try await service.get(target)
            #expect(response.status == 500, "\(target): \(response.status)")
            #expect(response.text == #"{"error":"internal server error"}"#, "\(target): \(response.text)")
        }
        let late = try await service.get("/broken/late")
        #expect(late.status == 200)
        #expect(!late.isComplete, "a stream that failed must not end like a complete one")
        let tail = String(decoding: late.body.suffix(4_096), as: UTF8.self)
        for word in Self.databaseWords where word != "JSON" {
            #expect(!tail.localizedCaseInsensitiveContains(word), "the truncated body ends with '\(tail.suffix(200))'")
        }
        // Compressed, the failure reaches the client the same way: the compression stage
        // stops, and what it had not handed over yet is never sent as a whole response.
        for coding in ["zstd", "gzip"] {
            // Either the head went out (then the body is cut short) or nothing did (then a
            // generic 500): never a complete 200, never the database's words.
            let compressed = try await service.get("/broken/late", headers: [("Accept-Encoding", coding)])
            if compressed.status == 500 {
                #expect(compressed.text == #"{"error":"internal server error"}"#, "\(coding)")
            } else {
                #expect(compressed.status == 200, "\(coding)")
                #expect(compressed.header("Content-Encoding") == coding)
                #expect(!compressed.isComplete, "a compressed stream that failed must not end like a complete one (\(coding))")
            }
        }
        #expect(try await service.get("/pets/Fluffy").status == 200)
        await service.stop()
    }

    /// The text around each occurrence of `needle` in `text`, for failure messages.
    static func context(of needle: String, in text: String) -> String {
        var found: [String] = []
        var rest = text[...]
        while let range = rest.range(of: needle) {
            let start = text.index(range.lowerBound, offsetBy: -300, limitedBy: text.startIndex) ?? text.startIndex
            let end = text.index(range.upperBound, offsetBy: 100, limitedBy: text.endIndex) ?? text.endIndex
            found.append(String(text[start..<end]).replacingOccurrences(of: needle, with: "<PASSWORD>"))
            rest = text[range.upperBound...]
        }
        return found.joined(separator: "\n---\n")
    }

    static let password = "Xyzzy-s3cret-7731"
    static let wrongPassword = "Plugh-wr0ng-4417"

    @Test("the database password never appears in logs or responses, right or wrong",
          .enabled(if: ThrowawayPostgres.isAvailable, "PostgreSQL server binaries (initdb) are not installed"))
    func passwordNotLogged() async throws {
        let cluster = try await onThread { try ThrowawayPostgres.create(passwordAuthentication: true) }
        defer { cluster.remove() }
        try await onThread {
            try cluster.psql("CREATE ROLE spout_pw LOGIN PASSWORD '\(Self.password)'")
            try cluster.psql("CREATE DATABASE spout_pw OWNER spout_pw")
        }
        let base = "127.0.0.1:\(cluster.port)/spout_pw"
        try await onThread { try SampleData.seed("postgresql://spout_pw:\(Self.password)@\(base)", employees: 10) }
        let directory = try ServiceDirectory(
            databaseURL: "sqlite:unused", extraEndpoints: ["broken.yaml": Self.runtimeFailures], poolSize: 2)
        defer { directory.remove() }

        let runs: [(url: String, secret: String, works: Bool)] = [
            ("postgresql://spout_pw:\(Self.password)@\(base)", Self.password, true),
            ("postgresql://spout_pw:\(Self.wrongPassword)@\(base)", Self.wrongPassword, false),
            ("postgresql://spout_pw@\(base)?password=\(Self.wrongPassword)&connect_timeout=5", Self.wrongPassword, false),
        ]
        for run in runs {
            let server = try await ServerProcess.serving(
                arguments: ["--config", directory.configFile, "--database", run.url, "--no-seed"],
                environment: ["SPOUT_LOG_LEVEL": "trace"])
            var bodies = ""
            for target in ["/pets", "/pets/Fluffy", "/broken/now", "/broken/late", "/ready", "/employees/10001?details=titles"] {
                let response = try await RawHTTP.get(port: server.port, target)
                bodies += response.text
                if run.works {
                    #expect(target.hasPrefix("/broken") || response.status == 200, "\(target): \(response.status)")
                } else {
                    #expect(response.status == 503, "\(target): \(response.status) \(response.text)")
                }
            }
            server.signal(SIGTERM)
            let status = await server.waitForExit()
            let log = server.log
            #expect(status == 0, "exit status \(status.map(String.init) ?? "none") (\(run.works ? "right" : "wrong") password):\n\(log.suffix(3_000).replacingOccurrences(of: run.secret, with: "<PASSWORD>"))")
            #expect(log.contains("listening on"))
            #expect(!log.contains(run.secret), "the password is in the log (\(run.url)):\n\(Self.context(of: run.secret, in: log))")
            #expect(!bodies.contains(run.secret))
            #expect(!bodies.contains("password authentication"))
            if !run.works {
                // The failure is logged (so operators can see it), just without the secret.
                #expect(log.localizedCaseInsensitiveContains("password") || log.contains("connection failed"), "\(log.suffix(2_000))")
            }
            await server.stop()
        }
    }
}
