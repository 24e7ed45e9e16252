import Foundation
import SpoutTestSupport

/// A throwaway PKI made with the openssl CLI in a temporary directory: a CA, a server
/// certificate it signed for `127.0.0.1` and `localhost` (valid for two days), an expired one
/// with the same key, one for another host (`spout.invalid` only) with the same key, and a
/// second, unrelated CA.
///
/// Contract: ``remove()`` deletes the directory; call it in a `defer` right after ``make()``.
struct TestCertificates: Sendable {
    static let openssl = "/usr/bin/openssl"

    let directory: String

    var caCertificate: String { self.directory + "/ca.pem" }
    var serverCertificate: String { self.directory + "/server.pem" }
    var serverKey: String { self.directory + "/server.key" }
    var expiredCertificate: String { self.directory + "/expired.pem" }
    var otherCACertificate: String { self.directory + "/other-ca.pem" }
    var otherHostCertificate: String { self.directory + "/other-host.pem" }

    /// The PEM text of a file of this PKI.
    func pem(_ path: String) throws -> String {
        try String(contentsOfFile: path, encoding: .utf8)
    }

    /// Generates every file; throws with openssl's output when a step fails.
    static func make() async throws -> TestCertificates {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-pki-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let pki = TestCertificates(directory: directory)
        do {
            let p256 = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
            try await self.openssl(["req", "-x509"] + p256 + ["-keyout", "\(directory)/ca.key", "-out", pki.caCertificate, "-subj", "/CN=Spout Test CA", "-days", "2"])
            try await self.openssl(["req", "-x509"] + p256 + ["-keyout", "\(directory)/other-ca.key", "-out", pki.otherCACertificate, "-subj", "/CN=Other CA", "-days", "2"])
            try await self.openssl(["req"] + p256 + ["-keyout", pki.serverKey, "-out", "\(directory)/server.csr", "-subj", "/CN=127.0.0.1"])
            let extensions = "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
            try extensions.write(toFile: "\(directory)/server.ext", atomically: true, encoding: .utf8)
            try await self.openssl([
                "x509", "-req", "-in", "\(directory)/server.csr", "-CA", pki.caCertificate, "-CAkey", "\(directory)/ca.key",
                "-set_serial", "2", "-days", "2", "-extfile", "\(directory)/server.ext", "-out", pki.serverCertificate,
            ])
            try "subjectAltName=DNS:spout.invalid\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n".write(
                toFile: "\(directory)/other-host.ext", atomically: true, encoding: .utf8)
            try await self.openssl([
                "x509", "-req", "-in", "\(directory)/server.csr", "-CA", pki.caCertificate, "-CAkey", "\(directory)/ca.key",
                "-set_serial", "3", "-days", "2", "-extfile", "\(directory)/other-host.ext", "-out", pki.otherHostCertificate,
            ])
            // `openssl ca` is the CLI's way to choose both dates (OpenSSL 3.0): a certificate
            // that expired in 2020, for the same key.
            let caConfig = """
                [ca]
                default_ca = test
                [test]
                database = \(directory)/index.txt
                new_certs_dir = \(directory)
                serial = \(directory)/serial
                default_md = sha256
                policy = anything
                [anything]
                commonName = supplied

                """
            try caConfig.write(toFile: "\(directory)/ca.cnf", atomically: true, encoding: .utf8)
            try "".write(toFile: "\(directory)/index.txt", atomically: true, encoding: .utf8)
            try "04\n".write(toFile: "\(directory)/serial", atomically: true, encoding: .utf8)
            try await self.openssl([
                "ca", "-batch", "-config", "\(directory)/ca.cnf", "-cert", pki.caCertificate, "-keyfile", "\(directory)/ca.key",
                "-in", "\(directory)/server.csr", "-out", pki.expiredCertificate, "-startdate", "20200101000000Z",
                "-enddate", "20200102000000Z", "-notext", "-extfile", "\(directory)/server.ext",
            ])
        } catch {
            pki.remove()
            throw error
        }
        return pki
    }

    /// The SHA-256 pin (Base64) of the public key in the certificate at `path`, computed by
    /// openssl, independently of the client's own code.
    func pin(ofCertificate path: String) async throws -> String {
        let script = "\(Self.openssl) x509 -in '\(path)' -pubkey -noout | \(Self.openssl) pkey -pubin -outform der "
            + "| \(Self.openssl) dgst -sha256 -binary | base64"
        let result = try await ChildProcess.run(executable: "/bin/sh", arguments: ["-c", script], environment: ["PATH": "/usr/bin:/bin"])
        guard result.status == 0 else { throw OpenSSLFailure(description: "pin of \(path): \(result.standardError)") }
        return result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: self.directory)
    }

    struct OpenSSLFailure: Error, CustomStringConvertible {
        var description: String
    }

    private static func openssl(_ arguments: [String]) async throws {
        let result = try await ChildProcess.run(executable: self.openssl, arguments: arguments, environment: ["PATH": "/usr/bin:/bin"])
        guard result.status == 0 else {
            throw OpenSSLFailure(description: "openssl \(arguments.prefix(2).joined(separator: " ")) failed: \(result.standardError)")
        }
    }
}
