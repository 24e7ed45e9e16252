#if os(Linux)
import Foundation
import NIOCore
import NIOSSL

/// A ``SpoutTLSConfiguration`` made ready for ``NIOHTTPTransport``: swift-nio-ssl's client
/// configuration (the trust roots, full verification) and the pins as raw digests.
struct TLSTrust: Sendable {
    let configuration: TLSConfiguration
    /// The SHA-256 digests of the accepted `SubjectPublicKeyInfo`s; empty when nothing is pinned.
    let pins: Set<[UInt8]>

    /// Reads the extra roots and decodes the pins; throws
    /// ``SpoutClientError/invalidConfiguration(_:)`` for a PEM or a pin that cannot be read, or
    /// for no trust root at all. The system's roots are loaded later, by the first connection.
    init(_ configuration: SpoutTLSConfiguration) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        var extraRoots: [NIOSSLCertificate] = []
        for (index, pem) in configuration.additionalTrustRootsPEM.enumerated() {
            let certificates: [NIOSSLCertificate]
            do {
                certificates = try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8))
            } catch {
                throw SpoutClientError.invalidConfiguration("additional trust root \(index) is not a PEM certificate: \(error)")
            }
            guard !certificates.isEmpty else {
                throw SpoutClientError.invalidConfiguration("additional trust root \(index) holds no PEM certificate")
            }
            extraRoots += certificates
        }
        if configuration.usesSystemTrustRoots {
            tls.trustRoots = .default
            if !extraRoots.isEmpty { tls.additionalTrustRoots = [.certificates(extraRoots)] }
        } else {
            guard !extraRoots.isEmpty else {
                throw SpoutClientError.invalidConfiguration("no trust roots: the system's are off and none were added")
            }
            tls.trustRoots = .certificates(extraRoots)
        }
        tls.certificateVerification = .fullVerification
        self.configuration = tls
        self.pins = Set(try configuration.pinnedKeys.map(Self.decodePin))
    }

    /// A pin's 32 bytes, from Base64 with an optional `sha256/` prefix.
    static func decodePin(_ text: String) throws -> [UInt8] {
        let base64 = text.hasPrefix("sha256/") ? String(text.dropFirst("sha256/".count)) : text
        guard let digest = Data(base64Encoded: base64), digest.count == 32 else {
            throw SpoutClientError.invalidConfiguration("pin '\(text)' is not the Base64 of a SHA-256 digest")
        }
        return Array(digest)
    }

    /// The SHA-256 digest of a certificate's `SubjectPublicKeyInfo` (what a pin names).
    static func keyDigest(of certificate: NIOSSLCertificate) throws -> [UInt8] {
        SHA256Hash.hash(try certificate.extractPublicKey().toSPKIBytes())
    }

    /// Nil when nothing is pinned or the key of the certificate the server presented on
    /// `channel` (its TLS handshake completed: the chain and the host were verified) is pinned;
    /// the refusal otherwise. Runs on the channel's event loop.
    func pinRefusal(on channel: any Channel, host: String) -> SpoutClientError? {
        guard !self.pins.isEmpty else { return nil }
        do {
            guard let leaf = try channel.pipeline.syncOperations.nioSSL_peerCertificate() else {
                return .certificateRejected("\(host) presented no certificate to check the pins against")
            }
            if self.pins.contains(try Self.keyDigest(of: leaf)) { return nil }
            return .certificateRejected("the key of \(host)'s certificate matches none of the \(self.pins.count) pinned keys")
        } catch {
            return .certificateRejected("\(host)'s certificate key could not be read: \(error)")
        }
    }

    /// A TLS failure as the client reports it: a certificate BoringSSL refused (chain, dates:
    /// `CERTIFICATE_VERIFY_FAILED`) or that names another host than the URL's (NIOSSL's own
    /// check) is ``SpoutClientError/certificateRejected(_:)``; anything else (a server that
    /// does not speak TLS, no common cipher) is ``SpoutClientError/connectionFailed(_:)``. Nil
    /// for an error that is not swift-nio-ssl's.
    static func classify(_ error: any Error, host: String) -> SpoutClientError? {
        let text = String(describing: error)
        if let error = error as? NIOSSLExtraError {
            if error == .failedToValidateHostname || error == .serverHostnameImpossibleToMatch {
                return .certificateRejected("\(host): the certificate is not for this host: \(text)")
            }
            return .connectionFailed("\(host): TLS handshake failed: \(text)")
        }
        guard let error = error as? NIOSSLError else { return nil }
        switch error {
        case .noCertificateToValidate, .unableToValidateCertificate:
            return .certificateRejected("\(host): \(text)")
        case .handshakeFailed where text.contains("CERTIFICATE_VERIFY_FAILED"):
            return .certificateRejected("\(host): \(text)")
        default:
            return .connectionFailed("\(host): TLS handshake failed: \(text)")
        }
    }
}
#endif
