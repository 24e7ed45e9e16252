import Foundation

#if canImport(Glibc)
import Glibc
#endif
import SpoutTestSupport
import Testing

/// What the built `spout` executable prints and returns when it cannot run: a configuration
/// error prints `file:line:column: problem` alone and exits 78 (`EX_CONFIG`), a runtime
/// failure prints `Error: problem` alone and exits 1, and only a command-line mistake prints
/// the usage (exit 64). The statuses are documented in docs/configuration.md, "Exit status".
@Suite struct CommandErrorOutputTests {
    /// Runs `spout ARGUMENTS` without the test process's `SPOUT_*` variables, plus `environment`.
    static func spout(_ arguments: [String], environment extra: [String: String] = [:]) async throws -> ChildProcess.Result {
        var environment = ChildProcess.inheritedEnvironment
        environment.merge(extra) { _, new in new }
        return try await ChildProcess.run(executable: try ChildProcess.spoutExecutable(), arguments: arguments, environment: environment)
    }

    /// A service directory with `spout.yaml` and the given endpoint files under `endpoints/`;
    /// removed when the value is released (keep it alive while `spout` runs).
    static func serviceDirectory(configuration: String, endpoints: [String: String] = [:]) throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory()
        try directory.write("spout.yaml", configuration)
        for (name, text) in endpoints { try directory.write("endpoints/" + name, text) }
        return directory
    }

    @Test func anUnknownKeyInTheConfigurationFilePrintsTheProblemAlone() async throws {
        let directory = try Self.serviceDirectory(configuration: "server:\n  port: 80\n  hots: x\n")
        defer { withExtendedLifetime(directory) {} }
        let file = (directory.path as NSString).appendingPathComponent("spout.yaml")
        let result = try await Self.spout(["serve", "--config", file])
        #expect(result.status == 78)
        #expect(result.standardError == "\(file):3:3: unknown key 'hots' in 'server' (known keys: host, port, limits, spool, cors, timingHeader, heartbeatSeconds, metrics)\n")
        #expect(!result.standardError.contains("Usage:"))
        #expect(result.standardOutput.isEmpty)
    }

    /// The README's first version of its own endpoint: no `paths`.
    /// A SQLite database whose folder cannot be created (here: a file stands in its path, which
    /// stops root too; for another user, a folder it may not write) names the folder and the way
    /// out, not Foundation's "You don't have permission".
    /// The README's first command in someone else's checkout: `data/` cannot be made there, so
    /// the embedded database goes to the user's temporary folder and the service answers.
    @Test func theEmbeddedDefaultServesWhereItsFolderCannotBeMade() async throws {
        let served = try await ServedSpout.start(
            root: Repository.root, environment: ["SPOUT_DATABASE_SEED_EMPLOYEES": "50"], embeddedDefault: true)
        do {
            #expect(try await RawHTTP.get(port: served.port, "/health").status == 200)
            let pet = try await RawHTTP.get(port: served.port, "/pets/Fluffy")
            #expect(pet.status == 200 && pet.text.contains(#""owner":"Harold""#), "\(pet.text)")
            let uid = try served.runningUserIDs().first ?? getuid()
            let database = served.directory.appendingPathComponent("tmp/spout-\(uid)/spout.sqlite").path
            #expect(FileManager.default.fileExists(atPath: database), "no database at \(database)")
        } catch {
            await served.stop()
            throw error
        }
        await served.stop()
    }

    @Test func aDatabaseFolderThatCannotBeCreatedIsNamedWithTheWayOut() async throws {
        let endpoint = "paths:\n  /one:\n    get:\n      sql: SELECT 1 AS one\n"
        let directory = try Self.serviceDirectory(configuration: "", endpoints: ["one.yaml": endpoint])
        defer { withExtendedLifetime(directory) {} }
        try directory.write("not-a-folder", "")
        let folder = (directory.path as NSString).appendingPathComponent("not-a-folder/data")
        let result = try await Self.spout([
            "serve", "--config", (directory.path as NSString).appendingPathComponent("spout.yaml"),
            "--database", "sqlite:\(folder)/spout.sqlite",
        ])
        #expect(result.status == 1)
        #expect(result.standardError.hasPrefix("Error: cannot create the folder \(folder) for the SQLite database \(folder)/spout.sqlite"))
        #expect(result.standardError.contains("--database sqlite:/path/you/own/spout.sqlite (or SPOUT_DATABASE_URL)"))
        #expect(!result.standardError.contains("permission."))
    }

    @Test func anEndpointFileErrorPrintsTheProblemAlone() async throws {
        let endpoint = """
            /departments/{departmentNumber}/managers:
              get:
                sqlFile: managers/by-department.sql
            """
        let directory = try Self.serviceDirectory(configuration: "", endpoints: ["managers.yaml": endpoint])
        defer { withExtendedLifetime(directory) {} }
        let result = try await Self.spout(["serve", "--config", (directory.path as NSString).appendingPathComponent("spout.yaml")])
        let file = (directory.path as NSString).appendingPathComponent("endpoints/managers.yaml")
        #expect(result.status == 78)
        #expect(
            result.standardError
                == "\(file):1:1: unknown key '/departments/{departmentNumber}/managers' in an endpoint file "
                + "(known keys: description, auth, paths)\n")
    }

    @Test func aBadEnvironmentVariablePrintsTheProblemAlone() async throws {
        let directory = try Self.serviceDirectory(configuration: "")
        defer { withExtendedLifetime(directory) {} }
        let result = try await Self.spout(
            ["serve", "--config", (directory.path as NSString).appendingPathComponent("spout.yaml")],
            environment: ["SPOUT_PORT": "eighty"])
        #expect(result.status == 78)
        #expect(result.standardError == "environment: SPOUT_PORT: must be an integer, not 'eighty'\n")
    }

    @Test func aRuntimeFailurePrintsTheErrorWithoutUsage() async throws {
        let directory = try TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }
        let output = (directory.path as NSString).appendingPathComponent("missing/rows.json")
        let result = try await Self.spout(["export", "--database", "sqlite::memory:", "--output", output, "SELECT 1 AS one"])
        #expect(result.status == 1)
        #expect(result.standardError == "Error: cannot open \(output) for writing: No such file or directory\n")
    }

    /// `spout token` with no secret in the environment: the variable to set, not the usage.
    @Test func aTokenWithoutASecretNamesTheVariable() async throws {
        let result = try await Self.spout(["token", "--config", Repository.configFile, "--sub", "alice"])
        #expect(result.status == 78)
        #expect(
            result.standardError
                == "environment: SPOUT_JWT_SECRET is not set: spout token signs with the secret it holds "
                + "(at least 32 bytes: export SPOUT_JWT_SECRET=\"$(openssl rand -base64 32)\")\n")
        #expect(result.standardOutput.isEmpty)
    }

    /// A port another process listens on: the address and port, and how to choose another.
    @Test func aBusyPortNamesTheAddress() async throws {
        let listener = try LoopbackSocket.listen(port: 0)
        defer { close(listener) }
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        let port = Int(UInt16(bigEndian: address.sin_port))
        // A service whose SQL prepares on an empty database: the start gets as far as listening.
        let directory = try Self.serviceDirectory(
            configuration: "endpoints: [endpoints/*.yaml]\n",
            endpoints: ["answer.yaml": "paths:\n  /answer:\n    get:\n      sql: SELECT 42 AS answer\n"])
        defer { withExtendedLifetime(directory) {} }
        let result = try await Self.spout([
            "serve", "--config", (directory.path as NSString).appendingPathComponent("spout.yaml"), "--database", "sqlite::memory:",
            "--no-seed", "--host", "127.0.0.1", "--port", String(port),
        ])
        #expect(result.status == 1)
        #expect(
            result.standardError.hasSuffix(
                "Error: cannot listen on 127.0.0.1:\(port): address already in use "
                    + "(another process listens there: stop it, or choose another port with --port or SPOUT_PORT)\n"),
            "\(result.standardError)")
    }

    @Test func aCommandLineMistakePrintsTheUsage() async throws {
        let result = try await Self.spout(["serve", "--port", "eighty"])
        #expect(result.status == 64)
        #expect(result.standardError.contains("eighty"))
        #expect(result.standardError.contains("Usage:"))
    }
}
