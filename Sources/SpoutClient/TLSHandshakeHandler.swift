import NIOCore
import NIOSSL
import NIOTLS

/// Sits right after NIOSSL's client handler and tells the transport when the connection is
/// ready for a request: the handshake completed (the chain verified by BoringSSL) and the
/// server's key matches a pin, when there are pins.
///
/// The transport writes nothing before ``ready`` succeeds, so a server that fails a check
/// never sees the request (its headers may carry credentials). Failures are
/// ``SpoutClientError/certificateRejected(_:)`` for certificate problems and
/// ``SpoutClientError/connectionFailed(_:)`` for anything else.
///
/// The channel runs with `autoRead` off: this handler asks for the first read of the
/// handshake; NIOSSL asks for the next ones while it has no application data to deliver.
final class TLSHandshakeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let readyPromise: EventLoopPromise<Void>
    private let pins: Set<[UInt8]>
    private let host: String
    private var settled = false

    init(ready: EventLoopPromise<Void>, pins: Set<[UInt8]>, host: String) {
        self.readyPromise = ready
        self.pins = pins
        self.host = host
    }

    /// Succeeds once a request may be written; fails with the reason the server was refused.
    var ready: EventLoopFuture<Void> { self.readyPromise.futureResult }

    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        context.read()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent, !self.settled {
            self.settled = true
            if let refusal = self.pinRefusal(context: context) {
                self.readyPromise.fail(refusal)
                context.close(promise: nil)
            } else {
                self.readyPromise.succeed()
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !self.settled {
            self.settled = true
            self.readyPromise.fail(Self.classify(error, host: self.host))
            context.close(promise: nil)
            return
        }
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !self.settled {
            self.settled = true
            self.readyPromise.fail(SpoutClientError.connectionFailed("\(self.host): the connection closed during the TLS handshake"))
        }
        context.fireChannelInactive()
    }

    /// Nil when nothing is pinned or the leaf certificate's key is pinned; the error otherwise.
    private func pinRefusal(context: ChannelHandlerContext) -> SpoutClientError? {
        guard !self.pins.isEmpty else { return nil }
        do {
            guard let leaf = try context.pipeline.syncOperations.nioSSL_peerCertificate() else {
                return .certificateRejected("\(self.host) presented no certificate to check the pins against")
            }
            if self.pins.contains(try TLSContext.keyDigest(of: leaf)) { return nil }
            return .certificateRejected("the key of \(self.host)'s certificate matches none of the \(self.pins.count) pinned keys")
        } catch {
            return .certificateRejected("\(self.host)'s certificate key could not be read: \(error)")
        }
    }

    /// A handshake failure as the client reports it: a certificate BoringSSL refused (chain,
    /// dates: `CERTIFICATE_VERIFY_FAILED`) or that names another host than the URL's (NIOSSL's
    /// own check) is ``SpoutClientError/certificateRejected(_:)``; anything else (a server that
    /// does not speak TLS, no common cipher) is ``SpoutClientError/connectionFailed(_:)``.
    static func classify(_ error: any Error, host: String) -> SpoutClientError {
        if let error = error as? SpoutClientError { return error }
        let text = String(describing: error)
        if let error = error as? NIOSSLExtraError,
            error == .failedToValidateHostname || error == .serverHostnameImpossibleToMatch
        {
            return .certificateRejected("\(host): the certificate is not for this host: \(text)")
        }
        switch error as? NIOSSLError {
        case .noCertificateToValidate, .unableToValidateCertificate:
            return .certificateRejected("\(host): \(text)")
        case .handshakeFailed where text.contains("CERTIFICATE_VERIFY_FAILED"):
            return .certificateRejected("\(host): \(text)")
        default:
            return .connectionFailed("\(host): TLS handshake failed: \(text)")
        }
    }
}
