import Foundation
import HTTPTypes
import SpoutClient
import SpoutTestSupport
import Testing

/// gzip bodies decoded while they stream, through nginx over TLS (Spout compresses, nginx
/// passes the bytes through): the same rows as uncompressed, in bounded memory, and the bytes
/// on the wire counted by nginx (`$bytes_sent`).
@Suite(.serialized, .enabled(if: ThrowawayNginx.isAvailable)) struct CompressionTests {
    struct Row: Decodable {
        var employeeNumber: Int
        var firstName: String
        var lastName: String
    }

    static let rowCount = LargeStreamMemoryTests.rowCount

    /// A digest of every row read, in order, and how many there were.
    static func digest(_ client: SpoutClient, count: Int) async throws -> (rows: Int, digest: UInt64, encoding: String?) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var rows = 0
        let sequence = try await client.rows(Row.self, path: "/client-rows", query: [URLQueryItem(name: "count", value: "\(count)")])
        for try await row in sequence {
            rows += 1
            for byte in "\(row.employeeNumber) \(row.firstName) \(row.lastName);".utf8 {
                hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            }
        }
        return (rows, hash, sequence.headers[.contentEncoding])
    }

    /// The access log's line for the request of `target`, waiting a little for nginx to write
    /// it (it logs once the last byte was sent).
    static func logLine(_ nginx: ThrowawayNginx, request target: String, occurrence: Int) async throws -> ThrowawayNginx.AccessLogLine? {
        let lines = try await nginx.accessLog(atLeast: occurrence + 1) { $0.request.contains("GET \(target) ") }
        return lines.count > occurrence ? lines[occurrence] : nil
    }

    @Test func aGzipStreamDecodesToTheSameRowsInBoundedMemory() async throws {
        try await TLSTests.withTLS(extraFiles: LargeStreamMemoryTests.endpointFiles) { _, nginx, pki in
            let roots = [try pki.pem(pki.caCertificate)]
            let gzip = SpoutClient(baseURL: nginx.baseURL(), transport: NIOHTTPTransport(tls: SpoutTLSConfiguration(additionalTrustRootsPEM: roots)))
            let identity = SpoutClient(
                baseURL: nginx.baseURL(), transport: NIOHTTPTransport(tls: SpoutTLSConfiguration(additionalTrustRootsPEM: roots), decompresses: false))
            let compressed = try await Self.digest(gzip, count: Self.rowCount)
            let plain = try await Self.digest(identity, count: Self.rowCount)
            #expect(compressed.encoding == "gzip")
            #expect(plain.encoding == nil)
            #expect(compressed.rows == Self.rowCount)
            #expect(compressed.rows == plain.rows && compressed.digest == plain.digest)

            let target = "/client-rows?count=\(Self.rowCount)"
            let gzipBytes = try #require(try await Self.logLine(nginx, request: target, occurrence: 0)).bytesSent
            let identityBytes = try #require(try await Self.logLine(nginx, request: target, occurrence: 1)).bytesSent
            print("SpoutClientTests: \(Self.rowCount) rows over TLS: \(gzipBytes) bytes on the wire with gzip, \(identityBytes) without")
            #expect(gzipBytes * 3 < identityBytes)

            // Peak memory: the example program in a child process, 1,000 then 300,000 rows.
            let executable = try ChildProcess.builtExecutable(named: "spout-client-example")
            let base = nginx.baseURL().absoluteString
            for flags in [[String](), ["--identity"]] {
                let arguments = ["--count", "--ca", pki.caCertificate] + flags + [base]
                let small = try await ChildProcess.run(executable: executable, arguments: arguments + ["/client-rows?count=1000"])
                let large = try await ChildProcess.run(executable: executable, arguments: arguments + ["/client-rows?count=\(Self.rowCount)"])
                #expect(small.status == 0, "\(small.standardError)")
                #expect(large.status == 0, "\(large.standardError)")
                #expect(large.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "\(Self.rowCount)")
                let growth = large.peakResidentBytes - small.peakResidentBytes
                print(
                    "SpoutClientTests: TLS \(flags.isEmpty ? "gzip" : "identity"): peak resident memory \(small.peakResidentBytes / 1024) KiB "
                        + "for 1,000 rows, \(large.peakResidentBytes / 1024) KiB for \(Self.rowCount) rows (growth \(growth / 1024) KiB)")
                #expect(small.peakResidentBytes > 0 && large.peakResidentBytes > 0, "VmHWM could not be read")
                #expect(growth < LargeStreamMemoryTests.allowedGrowth, "the client's memory grew by \(growth / 1024) KiB")
            }
        }
    }

    @Test func theCacheStoresTheDecodedBody() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-client-gzip-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await TLSTests.withTLS(extraFiles: LargeStreamMemoryTests.endpointFiles) { _, nginx, pki in
            let client = SpoutClient(
                baseURL: nginx.baseURL(), configuration: SpoutClientConfiguration(cache: SpoutCacheConfiguration(directory: directory)),
                transport: NIOHTTPTransport(tls: SpoutTLSConfiguration(additionalTrustRootsPEM: [try pki.pem(pki.caCertificate)])))
            let first = try await Self.digest(client, count: 5000)
            #expect(first.encoding == "gzip")
            // The copy is written off the caller's task: wait for the body file.
            var stored: Data?
            for _ in 0..<100 where stored == nil {
                let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
                if let body = files.first(where: { $0.hasSuffix(".body") }) {
                    stored = FileManager.default.contents(atPath: directory.appendingPathComponent(body).path)
                } else {
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            let bytes = try #require(stored)
            #expect(bytes.first == UInt8(ascii: "["), "the cached body is not the decoded JSON")
            let rows = try JSONDecoder().decode([Row].self, from: bytes)
            #expect(rows.count == 5000)
        }
    }
}
