import Foundation
import SpoutTestDatabases
import SpoutTestSupport
import Testing

/// PostgreSQL over TLS, as managed servers require it (`sslmode=require` or `verify-full`):
/// every request path (a single object with details read event-driven, on a leased or a shared
/// connection, a stream read on a database thread) answers in full, over the installed server's own TLS and over records of
/// 16 KiB, PostgreSQL 17's framing of large messages (played by ``TLSRecordProxy``). With such
/// records a read can leave the end of an answer decrypted inside OpenSSL, where waiting for the
/// socket never sees it: before ``PostgresTLSBuffer`` the request waited until its answer
/// deadline cut the connection (504), or forever without a statement timeout.
@Suite("PostgreSQL over TLS", .serialized)
struct PostgresTLSTests {
    /// `/tls`: whether the serving connection uses TLS; `/wide/{n}?count=C&size=S`: an object
    /// of S bytes whose detail has C rows of S bytes each (read event-driven); `/big?rows=N`: a
    /// stream.
    static let endpoints = """
        paths:
          /tls:
            get:
              description: Whether the connection serving the request uses TLS.
              sql: SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()
              result: object
          /wide/{n}:
            get:
              description: An object of size bytes with a detail of count rows of size bytes each.
              sql: SELECT CAST(:n AS integer) AS n, repeat('x', :size) AS text
              result: object
              parameters:
                - name: n
                  type: integer
                - name: count
                  type: integer
                - name: size
                  type: integer
              details:
                - name: rows
                  sql: SELECT i, repeat('y', :size) AS text FROM generate_series(1, :count) AS i ORDER BY i

        """ + TestEndpoints.streams(.postgres).replacingOccurrences(of: "paths:\n", with: "")

    /// The exact body of `/wide/{n}?details=rows&count=&size=`.
    static func wideBody(n: Int, count: Int, size: Int) -> String {
        let text = String(repeating: "y", count: size)
        let rows = (1...count).map { #"{"i":\#($0),"text":"\#(text)"}"# }
        return #"{"n":\#(n),"text":"\#(String(repeating: "x", count: size))","rows":["# + rows.joined(separator: ",") + "]}"
    }

    /// Runs `body` against a service on a TLS cluster, reached at `url(cluster, proxy)`.
    private func withService(
        throughProxy: Bool, _ url: (ThrowawayPostgres, TLSRecordProxy?) -> String, _ body: (ServerProcess) async throws -> Void
    ) async throws {
        let cluster = try await onThread { try ThrowawayPostgres.create(tls: true) }
        defer { cluster.remove() }
        let proxy = throughProxy ? try await onThread { try TLSRecordProxy.start(before: cluster) } : nil
        defer { proxy?.stop() }
        let directory = try ServiceDirectory(
            databaseURL: url(cluster, proxy), extraEndpoints: ["tls.yaml": Self.endpoints], shipped: false, poolSize: 4,
            statementTimeoutMs: 2_000)
        defer { directory.remove() }
        // A request stuck on bytes it already has ends at the answer deadline, a statement
        // timeout and this grace: within the client's timeout, as a 504 the test names.
        let service = try await ServerProcess.serving(
            arguments: ["--config", directory.configFile, "--no-seed"], environment: ["SPOUT_DATABASE_ANSWER_GRACE_MS": "1000"])
        try await body(service)
        await service.stop()
    }

    /// Answers of many shapes (rows ending inside records, small ones), repeated, then at once,
    /// then a single value of a megabyte. The megabyte comes last: libpq grows its buffer for
    /// a message that large and keeps it, and with that much room a read takes whole records.
    private func expectWholeAnswers(from service: ServerProcess) async throws {
        let shapes: [(count: Int, size: Int)] = [(100, 5_000), (37, 5_000), (1_000, 5_000), (3, 10), (250, 700)]
        for round in 0..<3 {
            for shape in shapes + (round == 2 ? [(1, 1_000_000)] : []) {
                let response = try await service.get("/wide/\(round)?details=rows&count=\(shape.count)&size=\(shape.size)", timeout: 20)
                #expect(response.status == 200, "\(shape): \(response.status) \(response.text.prefix(200))")
                let expected = Self.wideBody(n: round, count: shape.count, size: shape.size)
                let whole = response.text == expected  // (not in the expectation: its text is megabytes)
                #expect(whole, "\(shape): \(response.body.count) bytes, \(expected.utf8.count) expected")
            }
        }
        try await withThrowingTaskGroup(of: (Int, HTTPTestResponse).self) { group in
            for index in 0..<12 {
                group.addTask { (index, try await service.get("/wide/\(index)?details=rows&count=100&size=5000", timeout: 20)) }
            }
            for try await (index, response) in group {
                #expect(response.status == 200, "\(index): \(response.status) \(response.text.prefix(200))")
                let expected = Self.wideBody(n: index, count: 100, size: 5_000)
                let whole = response.text == expected
                #expect(whole, "\(index): \(response.body.count) bytes, \(expected.utf8.count) expected")
            }
        }
        // Most of those objects were read on the shared connections, over the same TLS.
        #expect(try SlowDownloadsTests.metric(service, "spout_shared_reads_total").map { $0 > 0 } == true)
        let stream = try await service.get("/big?rows=20000", timeout: 30)
        let rows = stream.text.components(separatedBy: #"{"id":"#).count - 1
        let ended = stream.text.hasSuffix(#"{"id":20000,"pad":"\#(String(repeating: "x", count: 200))"}]"#)
        #expect(stream.status == 200 && rows == 20_000 && ended, "\(stream.status), \(rows) rows, ended: \(ended)")
    }

    @Test("verify-full against the server's own TLS: the connections use TLS, and every answer arrives whole",
          .enabled(if: ThrowawayPostgres.isAvailable, "PostgreSQL server binaries (initdb) are not installed"))
    func serversOwnTLS() async throws {
        try await self.withService(throughProxy: false, { cluster, _ in
            "postgresql://spout@127.0.0.1:\(cluster.port)/postgres?sslmode=verify-full&sslrootcert=\(cluster.certificate)"
        }) { service in
            let tls = try await service.get("/tls")
            #expect(tls.status == 200 && tls.text == #"{"ssl":true}"#, "\(tls.status) \(tls.text)")
            try await self.expectWholeAnswers(from: service)
        }
    }

    @Test("verify-full with a root that did not sign the server's certificate: 503, and the log says why",
          .enabled(if: ThrowawayPostgres.isAvailable, "PostgreSQL server binaries (initdb) are not installed"))
    func untrustedCertificate() async throws {
        let other = FileManager.default.temporaryDirectory.appendingPathComponent("spout-other-ca-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: other) }
        let made = try await ChildProcess.run(
            executable: "/usr/bin/env",
            arguments: ["openssl", "req", "-new", "-x509", "-days", "2", "-nodes", "-newkey", "rsa:2048", "-subj", "/CN=127.0.0.1",
                        "-keyout", other + "/ca.key", "-out", other + "/ca.pem"])
        try #require(made.status == 0, "\(made.standardError)")
        try await self.withService(throughProxy: false, { cluster, _ in
            "postgresql://spout@127.0.0.1:\(cluster.port)/postgres?sslmode=verify-full&sslrootcert=\(other)/ca.pem"
        }) { service in
            let refused = try await service.get("/tls")
            #expect(refused.status == 503 && refused.text == #"{"error":"connection failed"}"#, "\(refused.status) \(refused.text)")
            #expect(try await service.get("/ready").status == 503)
            let log = try String(contentsOfFile: service.logPath, encoding: .utf8)
            #expect(log.contains("certificate verify failed"), "\(log.suffix(1_000))")
        }
    }

    @Test("records of 16 KiB, as PostgreSQL 17 frames large messages: answers ending inside a record arrive whole, at once",
          .enabled(if: ThrowawayPostgres.isAvailable, "PostgreSQL server binaries (initdb) are not installed"))
    func largeRecords() async throws {
        try await self.withService(throughProxy: true, { _, proxy in
            "postgresql://spout@127.0.0.1:\(proxy!.port)/postgres?sslmode=require"
        }) { service in
            try await self.expectWholeAnswers(from: service)
            let log = try String(contentsOfFile: service.logPath, encoding: .utf8)
            let deadlinesCut = log.components(separatedBy: "database not answering").count - 1
            #expect(deadlinesCut == 0, "\(deadlinesCut) requests waited until their answer deadline")
        }
    }
}
