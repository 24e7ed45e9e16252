import Foundation
import SpoutClient

/// Fetches a JWKS document over HTTP or HTTPS with SpoutClient's transport (TLS verified
/// against the system's roots), for ``JWKSKeySource``.
///
/// Contract: the document is returned only from a 200 response, whole, and at most
/// ``maximumBytes`` long; a silent server fails after `timeout`. Redirects are not followed
/// (an identity provider's JWKS URL is its final address).
public enum JWKSFetcher {
    /// The largest JWKS document taken (providers publish a few kilobytes).
    public static let maximumBytes = 1 << 20

    /// The fetch of `url`.
    public static func fetch(_ url: URL, timeout: Duration = .seconds(10)) -> JWKSKeySource.Fetch {
        #if canImport(Darwin)
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = Double(timeout.components.seconds)
        let transport = URLSessionTransport(configuration: configuration)
        #else
        let transport = NIOHTTPTransport(connectTimeout: timeout, readTimeout: timeout, maximumIdleConnectionsPerOrigin: 0)
        #endif
        return {
            let response = try await transport.perform(TransportRequest(method: .get, url: url))
            defer { response.body.close() }
            guard response.status == 200 else { throw JWKSFetchError.status(response.status) }
            var document = Data()
            while let chunk = try await response.body.nextChunk() {
                document.append(contentsOf: chunk)
                if document.count > Self.maximumBytes { throw JWKSFetchError.tooLarge(Self.maximumBytes) }
            }
            return document
        }
    }
}
