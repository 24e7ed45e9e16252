import Logging
import SpoutTestServer

extension InProcessServer {
    /// The service of `directory` in the test process, wired as `spout serve` wires it
    /// (``start(configuration:environment:logger:)``), with ``TestTokens/secret`` as the token
    /// secret.
    static func start(_ directory: ServiceDirectory, logger: Logger = quietLogger) async throws -> InProcessServer {
        try await self.start(
            configuration: try directory.configuration(), environment: ["SPOUT_JWT_SECRET": TestTokens.secret], logger: logger)
    }
}

/// A logger that drops everything (the access log of thousands of requests is noise here).
let quietLogger = Logger(label: "spout.reliability", factory: { _ in SwiftLogNoOpLogHandler() })
