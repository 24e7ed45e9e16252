import Foundation
import SpoutEndpoints
import SpoutTestSupport

/// Bearer tokens for the servers these tests start: every `spout serve` child
/// (``ServerProcess``) and in-process service gets ``secret`` as `SPOUT_JWT_SECRET`, and
/// ``authorization(sub:)`` signs a token for it, as `spout token` would.
enum TestTokens {
    static let secret = "reliability-tests-secret-0123456789abcdef"

    /// `Authorization: Bearer <token>` for subject `sub` (and `role`, when given), valid for an
    /// hour.
    static func authorization(sub: String, role: String? = nil) async throws -> (String, String) {
        let verifier = try TokenVerifier(identity: .init(), secret: Self.secret, jwks: nil)
        let now = Int64(Date().timeIntervalSince1970)
        var claims: [String: ClaimValue] = ["sub": .string(sub), "exp": .integer(now + 3600)]
        if let role { claims["role"] = .string(role) }
        let token = try await verifier.signWithSecret(TokenClaims(claims))
        return ("Authorization", "Bearer \(token ?? "")")
    }
}

extension ServerProcess {
    /// `spout serve` with `arguments` (``start(arguments:environment:executable:prefix:workingDirectory:)``)
    /// and ``TestTokens/secret`` as `SPOUT_JWT_SECRET`, so the tokens these tests sign verify.
    static func serving(arguments: [String], environment: [String: String] = [:]) async throws -> ServerProcess {
        try await self.start(arguments: arguments, environment: ["SPOUT_JWT_SECRET": TestTokens.secret].merging(environment) { $1 })
    }
}
