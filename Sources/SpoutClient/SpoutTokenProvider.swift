/// Where a ``SpoutClient`` gets the bearer token it sends with every request (a login
/// session's access token, a token an identity provider's SDK keeps fresh).
///
/// Contract, as the client uses it:
/// - Before each request the provider is asked with `renew` false: return the token to send
///   (a cached one is fine). Its `Authorization: Bearer <token>` replaces any configured one.
/// - When the server answers `401`, the provider is asked once more with `renew` true, and the
///   request is sent again with that token (Spout decides a `401` before any SQL runs, so a
///   write sent twice this way ran at most once). A second `401` throws
///   ``SpoutClientError/server(_:)``; the provider is not asked a third time.
/// - An error the provider throws ends the call with that error.
public struct SpoutTokenProvider: Sendable {
    let token: @Sendable (_ renew: Bool) async throws -> String

    /// - Parameter token: the token to send; `renew` is true after the server refused the
    ///   last one (fetch or refresh a new one then).
    public init(_ token: @escaping @Sendable (_ renew: Bool) async throws -> String) {
        self.token = token
    }
}
