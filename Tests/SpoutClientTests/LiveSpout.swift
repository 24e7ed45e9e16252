import Foundation
import HTTPTypes
import SpoutClient
import SpoutTestSupport

/// A real `spout serve` (``ServedSpout``: a child process on the seeded SQLite default, as
/// `nobody` when the tests run as root) for the client to call through real sockets.
///
final class LiveSpout: Sendable {
    private let served: ServedSpout

    /// The server's URL, `http://127.0.0.1:PORT`.
    let baseURL: URL

    /// The URL of the SQLite file the server seeded and serves, when it was started without
    /// `--database`.
    var seededDatabaseURL: String { "sqlite:" + self.served.directory.appendingPathComponent("data/spout.sqlite").path }

    private init(served: ServedSpout) {
        self.served = served
        self.baseURL = URL(string: "http://127.0.0.1:\(served.port)")!
    }

    /// Starts the server (it seeds, then logs "listening") and returns once it listens. `extraFiles`, `environment` and `extraArguments` are ``ServedSpout``'s.
    static func start(
        extraFiles: [String: String] = [:], environment: [String: String] = [:], extraArguments: [String] = []
    ) async throws -> LiveSpout {
        var attempt = 1
        while true {
            do {
                return LiveSpout(
                    served: try await ServedSpout.start(
                        root: TestFixtures.repositoryRoot, extraArguments: extraArguments,
                        environment: ["SPOUT_JWT_SECRET": Self.tokenSecret].merging(environment) { $1 }, extraFiles: extraFiles))
            } catch where attempt < 5 && String(describing: error).contains("Text file busy") {
                // ETXTBSY: another test's child was forked while this server's copy of `spout`
                // was still open for writing, and holds that descriptor until it execs. The
                // copy is fine; a moment later it can be executed.
                attempt += 1
                try await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    /// The secret the server verifies tokens with (the pets' writes need one).
    static let tokenSecret = "client-tests-secret-0123456789abcdef0123"

    /// `Authorization: Bearer <token>` for subject `sub` (``token(sub:arguments:)``), for a
    /// client configured with the header itself.
    static func authorization(sub: String) async throws -> HTTPFields {
        [.authorization: "Bearer " + (try await Self.token(sub: sub))]
    }

    /// A token for subject `sub`, made by `spout token` with the server's secret (and its
    /// further `arguments`, such as `--expires-in`).
    static func token(sub: String, arguments: [String] = []) async throws -> String {
        let result = try await ChildProcess.run(
            executable: try ChildProcess.spoutExecutable(), arguments: ["token", "--sub", sub] + arguments,
            environment: ["SPOUT_JWT_SECRET": Self.tokenSecret, "PATH": "/usr/bin:/bin"])
        struct TokenFailure: Error { var message: String }
        guard result.status == 0 else { throw TokenFailure(message: "spout token failed: \(result.standardError)") }
        return result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs `body` with a started server and stops the server afterwards, also when `body`
    /// throws.
    static func with<Result>(
        extraFiles: [String: String] = [:], environment: [String: String] = [:], extraArguments: [String] = [],
        _ body: (LiveSpout) async throws -> Result
    ) async throws -> Result {
        let server = try await Self.start(extraFiles: extraFiles, environment: environment, extraArguments: extraArguments)
        do {
            let result = try await body(server)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    /// A client of this server.
    func client(_ configuration: SpoutClientConfiguration = SpoutClientConfiguration()) -> SpoutClient {
        SpoutClient(baseURL: self.baseURL, configuration: configuration)
    }

    /// Stops the server (SIGTERM, then waits).
    func stop() async {
        await self.served.stop()
    }
}
