import Foundation
import SpoutCore

extension EndpointSet {
    /// The verifier of `configuration`'s `identity` settings: the secret from the variable
    /// they name, the keys of their JWKS file and URL, their API keys with the keys from their
    /// variables. Nil when there is none of these (then every credential is refused).
    /// - Throws: ``ConfigurationError`` for a secret shorter than 32 bytes, a JWKS file that
    ///   cannot be read or decoded, a JWKS URL that is not `http(s)://`, an API key variable
    ///   that is unset, empty, not a usable key, or the key of another entry (never quoting a
    ///   secret or a key).
    public static func tokenVerifier(
        configuration: SpoutConfiguration, environment: [String: String]
    ) throws(ConfigurationError) -> TokenVerifier? {
        let identity = configuration.identity
        let file = configuration.file ?? "configuration"
        let variable = identity.secretFromEnvironment
        let secret = environment[variable].flatMap { $0.isEmpty ? nil : $0 }
        if let secret, secret.utf8.count < 32 {
            throw ConfigurationError(
                file: "environment",
                message: "\(variable) holds \(secret.utf8.count) bytes; an HMAC secret for tokens needs at least 32 (48 for HS384, 64 for HS512)")
        }
        var jwks: String?
        if !identity.jwksFile.isEmpty {
            let path = SpoutConfiguration.resolve(identity.jwksFile, against: configuration.baseDirectory)
            do {
                jwks = try String(contentsOfFile: path, encoding: .utf8)
            } catch {
                throw ConfigurationError(file: file, message: "identity.jwksFile: cannot read \(path) (\(SpoutConfiguration.reason(error)))")
            }
        }
        var fetchKeys: JWKSKeySource.Fetch?
        if !identity.jwksUrl.isEmpty {
            guard let url = URL(string: identity.jwksUrl), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil
            else {
                throw ConfigurationError(file: file, message: "identity.jwksUrl: not an http:// or https:// URL")
            }
            fetchKeys = JWKSFetcher.fetch(url)
        }
        let apiKeys = try Self.identityKeys(identity, environment: environment)
        guard secret != nil || jwks != nil || fetchKeys != nil || apiKeys.count > 0 else { return nil }
        do {
            return try TokenVerifier(identity: identity, secret: secret, jwks: jwks, fetchKeys: fetchKeys, apiKeys: apiKeys)
        } catch {
            throw ConfigurationError(file: file, message: "identity.jwksFile: not a JWKS document (\(error))")
        }
    }

    /// The API keys of `identity.apiKeys`, each read from its variable.
    static func identityKeys(
        _ identity: SpoutConfiguration.Identity, environment: [String: String]
    ) throws(ConfigurationError) -> IdentityKeys {
        var keys: [String] = []
        for entry in identity.apiKeys {
            let variable = entry.keyFromEnvironment
            let problem: String? =
                switch environment[variable]?.trimmedBlanks {
                case nil: "is not set"
                case ""?: "is empty"
                case let key? where !EndpointAuth.isUsableKey(key): "holds characters a header cannot carry (visible ASCII only)"
                case let key? where key.utf8.count(where: { $0 == UInt8(ascii: ".") }) == 2:
                    "holds a value shaped like a JWT (two dots); an API key must not be"
                case let key? where keys.contains(key): "holds the key of another identity.apiKeys entry"
                default: nil
                }
            if let problem {
                throw ConfigurationError(
                    file: "environment",
                    message: "\(variable), the API key of subject '\(entry.subject)' (identity.apiKeys), \(problem)")
            }
            keys.append(environment[variable]!.trimmedBlanks)
        }
        return IdentityKeys(identity.apiKeys, keys: keys, roleClaim: identity.roleClaim)
    }
}

extension EndpointSet {
    /// Whether some endpoint's SQL reads the caller's claims (`:claims.sub`) or its token
    /// decides a role: such endpoints rely on the database to keep callers apart.
    var reliesOnIdentity: Bool {
        self.endpoints.contains { endpoint in
            endpoint.tokenPolicy != nil
                && (endpoint.sql.portable + endpoint.sql.overrides.values.joined()).contains(":\(RequestIdentity.claimsPrefix)")
        }
    }

    /// What `spout serve` logs at start when requests may run as a role that row-level
    /// security does not apply to, while endpoints rely on the caller's identity: any token
    /// holder then passes every policy, and only the endpoints' own SQL keeps callers apart.
    /// Requests run as the login role unless `identity.roles` is set and every request gets a
    /// role (`defaultRole` and `anonymousRole`), and as each role of `identity.roles`. Empty
    /// when nothing is wrong, when no endpoint relies on identity, or when the database cannot
    /// tell (SQLite has no row-level security; the check is a best effort).
    public func rowSecurityBypassWarnings(on database: Database) async -> [String] {
        guard self.reliesOnIdentity else { return [] }
        var roles: [String?] = self.identity.roles.map { $0 }
        if self.identity.roles.isEmpty || self.identity.defaultRole.isEmpty || self.identity.anonymousRole.isEmpty { roles.append(nil) }
        let asked = roles
        guard
            let bypassing = try? await database.withSession(
                DatabaseWork(readOnly: true), { session in try await session.run { try $0.rolesBypassingRowSecurity(asked) } })
        else { return [] }
        return bypassing.map { role in
            "SECURITY: requests may run as the role \(role), which row-level security does not apply to (a superuser or BYPASSRLS): "
                + "every policy passes for every caller; log in as a role without those attributes, or set identity.roles to roles "
                + "the policies apply to (docs/configuration.md, Identity)"
        }
    }
}
