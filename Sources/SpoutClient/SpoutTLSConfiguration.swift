/// How ``NIOHTTPTransport`` trusts an `https` server (docs/client.md, "TLS").
///
/// By default the system's trust roots decide, as a browser's would: nothing to configure for a
/// server with a public certificate. For a private CA, add its certificate to
/// ``additionalTrustRootsPEM``; to trust only certain keys on top of that, pin them
/// (``pinnedKeys``).
///
/// Whatever is configured, verification is never weakened: the chain must lead to a trusted
/// root, be valid now and name the URL's host (or IP address). A server that fails any check is
/// ``SpoutClientError/certificateRejected(_:)`` before a byte of the request is sent.
public struct SpoutTLSConfiguration: Sendable, Equatable {
    /// Whether the operating system's trust roots (on Debian, `/etc/ssl/certs`) are trusted.
    /// Turn it off to trust ``additionalTrustRootsPEM`` alone.
    public var usesSystemTrustRoots: Bool
    /// Extra trusted root certificates, each the text of a PEM file (one or more
    /// `-----BEGIN CERTIFICATE-----` blocks): a private CA.
    public var additionalTrustRootsPEM: [String]
    /// SHA-256 digests of the server certificate's public key (its DER `SubjectPublicKeyInfo`),
    /// Base64-encoded, optionally prefixed `sha256/`. When not empty, the leaf certificate's key
    /// must match one of them, after the normal verification succeeded. Pin the key in use and
    /// the next one, so a key rotation does not lock the app out.
    ///
    /// `openssl x509 -in server.pem -pubkey -noout | openssl pkey -pubin -outform der |
    /// openssl dgst -sha256 -binary | base64` prints a certificate's pin.
    public var pinnedKeys: [String]

    public init(usesSystemTrustRoots: Bool = true, additionalTrustRootsPEM: [String] = [], pinnedKeys: [String] = []) {
        self.usesSystemTrustRoots = usesSystemTrustRoots
        self.additionalTrustRootsPEM = additionalTrustRootsPEM
        self.pinnedKeys = pinnedKeys
    }
}
