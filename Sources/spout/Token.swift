import ArgumentParser
import Foundation
import SpoutEndpoints

/// `spout token`: a token signed with the configured HMAC secret, for local development.
struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print an HS256 token signed with the configured secret (for local development).",
        discussion: """
            The secret is read from the environment variable that identity.secretFromEnvironment \
            names (SPOUT_JWT_SECRET by default). The token carries sub, the role when given, \
            iat and exp (and iss and aud when the configuration checks them). Without the \
            secret it exits with status 78 and says which variable to set.
            """
    )

    @Option(help: "The configuration file (default: config/spout.yaml, or $SPOUT_CONFIG).")
    var config: String?

    @Option(help: "The subject (sub claim): who the token speaks for.")
    var sub: String

    @Option(help: "The role claim (identity.roleClaim), if any.")
    var role: String?

    @Option(help: "Seconds until the token expires.")
    var expiresIn: Int = 3600

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let configuration = try SpoutConfiguration.load(file: self.config, environment: environment)
        let variable = configuration.identity.secretFromEnvironment
        guard let verifier = try EndpointSet.tokenVerifier(configuration: configuration, environment: environment),
            verifier.hasSecret
        else {
            // The environment's mistake, not the command line's: said alone, without the usage.
            throw ConfigurationError(
                file: "environment",
                message: "\(variable) is not set: spout token signs with the secret it holds "
                    + "(at least 32 bytes: export \(variable)=\"$(openssl rand -base64 32)\")")
        }
        let now = Int64(Date().timeIntervalSince1970)
        var claims: [String: ClaimValue] = ["sub": .string(self.sub), "iat": .integer(now), "exp": .integer(now + Int64(self.expiresIn))]
        if let role = self.role { claims[configuration.identity.roleClaim] = .string(role) }
        if !configuration.identity.issuer.isEmpty { claims["iss"] = .string(configuration.identity.issuer) }
        if !configuration.identity.audience.isEmpty { claims["aud"] = .string(configuration.identity.audience) }
        guard let token = try await verifier.signWithSecret(TokenClaims(claims)) else {
            throw ConfigurationError(file: "environment", message: "\(variable) holds no secret to sign with")
        }
        print(token)
    }
}
