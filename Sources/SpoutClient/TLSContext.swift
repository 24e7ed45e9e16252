import Crypto
import Foundation
import NIOSSL
import Synchronization

/// A ``SpoutTLSConfiguration`` made ready for NIOSSL: the BoringSSL context (trust roots
/// loaded once, shared by every connection of a transport) and the pins as raw digests.
struct TLSContext: Sendable {
    let sslContext: NIOSSLContext
    /// The SHA-256 digests of the accepted `SubjectPublicKeyInfo`s; empty when nothing is pinned.
    let pins: Set<[UInt8]>

    /// Loads the trust roots and decodes the pins; throws
    /// ``SpoutClientError/invalidConfiguration(_:)`` for a PEM or a pin that cannot be read.
    /// Reads the system's roots from disk: call it once, off any event loop.
    init(_ configuration: SpoutTLSConfiguration) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        var extraRoots: [NIOSSLCertificate] = []
        for (index, pem) in configuration.additionalTrustRootsPEM.enumerated() {
            do {
                extraRoots += try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8))
            } catch {
                throw SpoutClientError.invalidConfiguration("additional trust root \(index) is not a PEM certificate: \(error)")
            }
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
        do {
            self.sslContext = try NIOSSLContext(configuration: tls)
        } catch {
            throw SpoutClientError.invalidConfiguration("TLS: \(error)")
        }
        self.pins = Set(try configuration.pinnedKeys.map(Self.decodePin))
    }

    /// A pin's 32 bytes, from Base64 with an optional `sha256/` prefix.
    static func decodePin(_ text: String) throws -> [UInt8] {
        let base64 = text.hasPrefix("sha256/") ? String(text.dropFirst("sha256/".count)) : text
        guard let digest = Data(base64Encoded: base64), digest.count == SHA256.byteCount else {
            throw SpoutClientError.invalidConfiguration("pin '\(text)' is not the Base64 of a SHA-256 digest")
        }
        return Array(digest)
    }

    /// The SHA-256 digest of a certificate's `SubjectPublicKeyInfo` (what a pin names).
    static func keyDigest(of certificate: NIOSSLCertificate) throws -> [UInt8] {
        Array(SHA256.hash(data: try certificate.extractPublicKey().toSPKIBytes()))
    }

    /// Whether `host` is an IP address literal (sent without SNI and checked against the
    /// certificate's IP addresses, not its DNS names).
    static func isAddressLiteral(_ host: String) -> Bool {
        host.contains(":") || host.allSatisfy { $0.isNumber || $0 == "." }
    }
}

/// Makes a transport's ``TLSContext`` on first use and keeps it (or the configuration error)
/// for every later connection: the system's trust roots are read once per transport, and
/// only by a transport that talks `https`.
final class TLSContextLoader: Sendable {
    private let configuration: SpoutTLSConfiguration
    private let loaded = Mutex<Result<TLSContext, SpoutClientError>?>(nil)

    init(configuration: SpoutTLSConfiguration) {
        self.configuration = configuration
    }

    /// The context; throws ``SpoutClientError/invalidConfiguration(_:)`` when it cannot be made.
    func context() throws -> TLSContext {
        try self.loaded.withLock { loaded in
            if let loaded { return loaded }
            let result: Result<TLSContext, SpoutClientError>
            do {
                result = .success(try TLSContext(self.configuration))
            } catch let error as SpoutClientError {
                result = .failure(error)
            } catch {
                result = .failure(.invalidConfiguration(String(describing: error)))
            }
            loaded = result
            return result
        }.get()
    }
}
