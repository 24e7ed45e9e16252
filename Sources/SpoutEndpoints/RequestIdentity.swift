import HTTPTypes
import SpoutCore
import SpoutHTTP

/// Who a request on a token-covered endpoint is: the verified claims (none for an anonymous
/// request) and the PostgreSQL role it runs as.
///
/// Contract: ``authenticate(_:policy:verifier:settings:)`` decides before any SQL runs; it
/// throws the 401 or 403 ``HTTPError`` the request gets, whose message never holds the token.
public struct RequestIdentity: Sendable, Hashable {
    /// The prefix of claim parameters in SQL: `:claims.sub`.
    public static let claimsPrefix = "claims."

    /// The verified claims; nil for an anonymous request.
    public var claims: TokenClaims?
    /// The role to switch to; nil keeps the connection's own.
    public var role: String?

    /// The claim path of a parameter name (`claims.address.city` → `address.city`); nil for a
    /// name that is not a claim.
    public static func claimPath(of name: String) -> String? {
        guard name.hasPrefix(self.claimsPrefix), name.utf8.count > self.claimsPrefix.utf8.count else { return nil }
        return String(name.dropFirst(self.claimsPrefix.count))
    }

    /// The value of claim parameter `name`: NULL when the claim is missing or the request is
    /// anonymous.
    public func argument(for name: String) -> SQLValue {
        guard let path = Self.claimPath(of: name), let value = self.claims?.value(at: path) else { return .null }
        return value.sqlValue
    }

    /// Adds every claim parameter that `names` use to `arguments`.
    public func bind(_ names: some Sequence<String>, into arguments: inout [String: SQLValue]) {
        for name in names where Self.claimPath(of: name) != nil { arguments[name] = self.argument(for: name) }
    }

    /// The database session: the role and the claims as JSON (`{}` when anonymous).
    public var session: RequestSession {
        RequestSession(role: self.role, claimsJSON: self.claims?.jsonText ?? "{}")
    }

    /// The `WWW-Authenticate` value of a refused token (RFC 6750).
    static func challenge(error: String?) -> HTTPFields {
        var value = "Bearer realm=\"\(APIKeySet.realm)\""
        if let error { value += ", error=\"\(error)\"" }
        return [.wwwAuthenticate: value]
    }

    /// The identity of a request with `authorization` and `apiKey` (its `Authorization` and
    /// `X-API-Key` headers) under `policy`; throws 401 (no credential where one is needed, or
    /// one that does not verify) or 403 (a role the endpoint or the configuration does not
    /// allow).
    ///
    /// The credential is the bearer token, else the `X-API-Key` value. A bearer credential
    /// shaped like a JWT (two dots), or any bearer credential when no API key carries an
    /// identity, is verified as a token; any other credential must be one of the verifier's
    /// ``IdentityKeys``.
    public static func authenticate(
        authorization: String?, apiKey: String? = nil, policy: TokenPolicy, verifier: TokenVerifier?,
        settings: SpoutConfiguration.Identity
    ) async throws -> RequestIdentity {
        let anonymousRole = settings.anonymousRole.isEmpty ? nil : settings.anonymousRole
        let bearer = APIKeySet.credential(authorization: authorization, apiKey: nil)
        guard let credential = bearer ?? APIKeySet.credential(authorization: nil, apiKey: apiKey) else {
            guard policy.anonymous, policy.roles.isEmpty else {
                throw HTTPError(
                    status: .unauthorized, message: "missing token: send Authorization: Bearer <JWT>", headers: self.challenge(error: nil))
            }
            return RequestIdentity(claims: nil, role: anonymousRole)
        }
        guard let verifier else {
            throw HTTPError(
                status: .unauthorized, message: "invalid token: no key to verify tokens is configured",
                headers: self.challenge(error: "invalid_token"))
        }
        let claims: TokenClaims
        let isToken = bearer != nil && (verifier.apiKeys.count == 0 || credential.utf8.count(where: { $0 == UInt8(ascii: ".") }) == 2)
        if isToken {
            switch await verifier.verify(credential) {
            case .success(let verified): claims = verified
            case .failure(let rejection):
                throw HTTPError(
                    status: .unauthorized, message: "invalid token: \(rejection.reason)", headers: self.challenge(error: "invalid_token"))
            }
        } else if let known = verifier.apiKeys.identity(of: credential) {
            claims = known
        } else {
            throw HTTPError(
                status: .unauthorized, message: "invalid credentials: neither a token nor a known API key",
                headers: self.challenge(error: "invalid_token"))
        }
        for path in policy.requiredClaims {
            switch claims.value(at: path) {
            case nil, .null?:
                throw HTTPError(
                    status: .forbidden, message: "missing claim: this endpoint needs the token's '\(path)' (auth.requiredClaims)",
                    headers: self.challenge(error: "insufficient_scope"))
            default:
                continue
            }
        }
        var role: String?
        if case .string(let named)? = claims.claims[settings.roleClaim], !named.isEmpty { role = named }
        if !policy.roles.isEmpty && !policy.roles.contains(role ?? "") {
            throw HTTPError(
                status: .forbidden,
                message: "insufficient role: needs one of \(policy.roles.joined(separator: ", ")); the token's role is "
                    + (role.map { "'\($0)'" } ?? "missing"),
                headers: self.challenge(error: "insufficient_scope"))
        }
        guard !settings.roles.isEmpty else { return RequestIdentity(claims: claims, role: nil) }
        let switched = role ?? (settings.defaultRole.isEmpty ? nil : settings.defaultRole)
        if let switched, !settings.roles.contains(switched) {
            throw HTTPError(status: .forbidden, message: "role '\(switched)' is not allowed (identity.roles)")
        }
        return RequestIdentity(claims: claims, role: switched)
    }
}
