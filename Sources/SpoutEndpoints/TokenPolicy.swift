/// What an endpoint covered by `auth: {token: jwt}` asks of a request (see ``EndpointAuth``).
///
/// Contract, decided before any SQL runs: no token is a 401 unless ``anonymous`` (then the
/// request runs with no claims: every `:claims.…` parameter is NULL); a token that does not
/// verify is a 401 (`WWW-Authenticate: Bearer error="invalid_token"`); a verified token whose
/// role is not in ``roles`` (when not empty) is a 403 naming the roles needed; a verified
/// token without a claim of ``requiredClaims`` (absent or null) is a 403 naming the claim.
/// Required claims are never met without a token: with them, ``anonymous`` is refused.
public struct TokenPolicy: Sendable, Hashable {
    /// Whether requests without a token are served.
    public var anonymous: Bool
    /// The roles (the token's role claim) allowed; empty: any verified token.
    public var roles: [String]
    /// Claims every token must carry, by path (`email`, `address.city`); empty: none.
    public var requiredClaims: [String]

    public init(anonymous: Bool = false, roles: [String] = [], requiredClaims: [String] = []) {
        self.anonymous = anonymous
        self.roles = roles
        self.requiredClaims = requiredClaims
    }
}
