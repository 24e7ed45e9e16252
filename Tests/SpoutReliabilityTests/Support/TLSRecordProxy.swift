import Foundation
import SpoutTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `Tests/Tools/tls-record-proxy` in front of a ``ThrowawayPostgres``: it ends the clients'
/// TLS with the cluster's certificate and writes the server's bytes in TLS records of up to
/// 16 KiB, the way PostgreSQL 17 and later frame a large message (the installed PostgreSQL 15
/// writes at most 8 KiB a record). It talks plain protocol to the cluster.
///
/// Contract: ``stop()`` stops the proxy and deletes its directory; call it in a `defer` right
/// after ``start(before:)``.
final class TLSRecordProxy: Sendable {
    static var script: String { TestFixtures.repositoryRoot.appendingPathComponent("Tests/Tools/tls-record-proxy").path }

    let port: Int
    private let directory: String

    private init(port: Int, directory: String) {
        self.port = port
        self.directory = directory
    }

    /// Starts the proxy on a free loopback port in front of `cluster` (made with `tls`).
    static func start(before cluster: ThrowawayPostgres) throws -> TLSRecordProxy {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-tls-proxy-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let result = try ChildProcess.run(
            executable: "/usr/bin/env",
            arguments: ["python3", Self.script, cluster.certificate, cluster.certificateKey, "\(cluster.port)", directory + "/pid"])
        guard result.status == 0, let port = Int(result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            try? FileManager.default.removeItem(atPath: directory)
            throw RawSocket.Failure(description: "tls-record-proxy failed (\(result.status)): \(result.standardError)\(result.standardOutput)")
        }
        return TLSRecordProxy(port: port, directory: directory)
    }

    func stop() {
        if let pid = Daemon.pid(fromFile: self.directory + "/pid") { Daemon.stop(pid, signals: [SIGTERM, SIGKILL]) }
        try? FileManager.default.removeItem(atPath: self.directory)
    }
}
