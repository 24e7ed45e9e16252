import Foundation
import SpoutClient
import SpoutTestSupport
import Testing

/// SpoutClient over TLS: a real `spout serve` behind a real nginx that terminates TLS with
/// certificates of a throwaway CA (``TestCertificates``). Listener 0 presents a valid server
/// certificate, listener 1 an expired one with the same key, listener 2 one for another host.
@Suite(.serialized, .enabled(if: ThrowawayNginx.isAvailable)) struct TLSTests {
    struct Pet: Decodable, Equatable {
        var name: String
        var species: String
    }

    /// Spout, a PKI and nginx in front, for `body`; everything is stopped afterwards.
    static func withTLS(
        extraFiles: [String: String] = [:], _ body: (LiveSpout, ThrowawayNginx, TestCertificates) async throws -> Void
    ) async throws {
        let pki = try await TestCertificates.make()
        defer { pki.remove() }
        try await LiveSpout.with(extraFiles: extraFiles) { server in
            let certificates = [
                (pki.serverCertificate, pki.serverKey), (pki.expiredCertificate, pki.serverKey), (pki.otherHostCertificate, pki.serverKey),
            ]
            try await ThrowawayNginx.with(in: server, certificates: certificates.map { (certificate: $0.0, key: $0.1) }) { nginx in
                try await body(server, nginx, pki)
            }
        }
    }

    /// A client of nginx's listener `listener` trusting `tls`.
    static func client(_ nginx: ThrowawayNginx, listener: Int = 0, tls: SpoutTLSConfiguration) -> SpoutClient {
        SpoutClient(baseURL: nginx.baseURL(listener), transport: NIOHTTPTransport(tls: tls))
    }

    /// Runs `call` and expects ``SpoutClientError/certificateRejected(_:)``; prints the reason.
    static func expectRejected(_ what: String, _ call: () async throws -> Void) async {
        do {
            try await call()
            Issue.record("\(what): the server was trusted")
        } catch let error as SpoutClientError {
            if case .certificateRejected = error {
                print("SpoutClientTests: \(what): \(error)")
            } else {
                Issue.record("\(what): \(error), not certificateRejected")
            }
        } catch {
            Issue.record("\(what): \(error)")
        }
    }

    @Test func rowsStreamOverTLSWithAPrivateCA() async throws {
        try await Self.withTLS { server, nginx, pki in
            let client = Self.client(nginx, tls: SpoutTLSConfiguration(additionalTrustRootsPEM: [try pki.pem(pki.caCertificate)]))
            var overTLS: [Pet] = []
            for try await pet in try await client.rows(Pet.self, path: "/pets") { overTLS.append(pet) }
            var direct: [Pet] = []
            for try await pet in try await server.client().rows(Pet.self, path: "/pets") { direct.append(pet) }
            #expect(!overTLS.isEmpty)
            #expect(overTLS == direct)
            #expect(try await nginx.accessLog(atLeast: 1) { $0.request.contains("GET /pets ") && $0.status == 200 }.count == 1)
        }
    }

    @Test func aCertificateOfAnotherCAIsRejectedBeforeTheRequestIsSent() async throws {
        try await Self.withTLS { _, nginx, pki in
            let otherCA = Self.client(nginx, tls: SpoutTLSConfiguration(additionalTrustRootsPEM: [try pki.pem(pki.otherCACertificate)]))
            await Self.expectRejected("another CA") { _ = try await otherCA.object(Pet.self, path: "/pets/Fluffy") }
            let systemOnly = Self.client(nginx, tls: SpoutTLSConfiguration())
            await Self.expectRejected("the system's roots only") { _ = try await systemOnly.rows(Pet.self, path: "/pets") }
            #expect(try nginx.accessLog().isEmpty, "a request reached nginx through an untrusted connection")
        }
    }

    @Test func anExpiredCertificateOrOneForAnotherHostIsRejected() async throws {
        try await Self.withTLS { _, nginx, pki in
            let tls = SpoutTLSConfiguration(additionalTrustRootsPEM: [try pki.pem(pki.caCertificate)])
            await Self.expectRejected("an expired certificate") {
                _ = try await Self.client(nginx, listener: 1, tls: tls).object(Pet.self, path: "/pets/Fluffy")
            }
            await Self.expectRejected("a certificate for another host") {
                _ = try await Self.client(nginx, listener: 2, tls: tls).object(Pet.self, path: "/pets/Fluffy")
            }
            #expect(try nginx.accessLog().isEmpty, "a request reached nginx through an untrusted connection")
            // The same CA and key on the valid certificate: trusted.
            #expect(try await Self.client(nginx, listener: 0, tls: tls).object(Pet.self, path: "/pets/Fluffy").name == "Fluffy")
        }
    }

    @Test func aPinOfTheServersKeyPassesAndAnyOtherRejects() async throws {
        try await Self.withTLS { _, nginx, pki in
            let roots = [try pki.pem(pki.caCertificate)]
            let serverPin = try await pki.pin(ofCertificate: pki.serverCertificate)
            let otherPin = try await pki.pin(ofCertificate: pki.otherCACertificate)
            #expect(serverPin != otherPin)

            let pinned = Self.client(nginx, tls: SpoutTLSConfiguration(additionalTrustRootsPEM: roots, pinnedKeys: [otherPin, "sha256/" + serverPin]))
            #expect(try await pinned.object(Pet.self, path: "/pets/Fluffy").name == "Fluffy")
            // Counted once nginx has logged the pinned request (it logs after the last byte).
            #expect(try await nginx.accessLog(atLeast: 1) { $0.request.contains("GET /pets/Fluffy ") }.count == 1)
            let requestsBefore = try nginx.accessLog().count

            let wrongPin = Self.client(nginx, tls: SpoutTLSConfiguration(additionalTrustRootsPEM: roots, pinnedKeys: [otherPin]))
            await Self.expectRejected("a pin of another key") { _ = try await wrongPin.object(Pet.self, path: "/pets/Fluffy") }
            #expect(try nginx.accessLog().count == requestsBefore, "the request went out before the pin was checked")
        }
    }
}

/// TLS settings that are refused before any connection is made.
@Suite struct TLSConfigurationTests {
    /// Expects the first `https` request with `tls` to throw
    /// ``SpoutClientError/invalidConfiguration(_:)``.
    static func expectInvalid(_ tls: SpoutTLSConfiguration, _ what: String) async {
        let client = SpoutClient(baseURL: URL(string: "https://127.0.0.1:9")!, transport: NIOHTTPTransport(tls: tls))
        do {
            _ = try await client.object([String: String].self, path: "/x")
            Issue.record("\(what) was accepted")
        } catch let error as SpoutClientError {
            if case .invalidConfiguration = error {} else { Issue.record("\(what): \(error), not invalidConfiguration") }
        } catch {
            Issue.record("\(what): \(error)")
        }
    }

    @Test func aPinThatIsNotASHA256DigestIsAConfigurationError() async {
        await Self.expectInvalid(SpoutTLSConfiguration(pinnedKeys: ["not-base64!"]), "a bad pin")
        await Self.expectInvalid(SpoutTLSConfiguration(pinnedKeys: ["sha256/AAAA"]), "a pin of 3 bytes")
    }

    @Test func aTrustRootThatIsNotPEMIsAConfigurationError() async {
        await Self.expectInvalid(SpoutTLSConfiguration(additionalTrustRootsPEM: ["-----BEGIN CERTIFICATE-----\nnope\n"]), "a bad trust root")
        await Self.expectInvalid(SpoutTLSConfiguration(usesSystemTrustRoots: false), "no trust root at all")
    }
}
