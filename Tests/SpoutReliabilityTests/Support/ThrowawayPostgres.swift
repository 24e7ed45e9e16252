import Foundation
import SpoutTestDatabases
import SpoutTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL cluster of one test's own, which the test may stop and start at will: made,
/// paused, resumed and removed by `scripts/throwaway-postgres` (initdb into a temporary
/// directory, a free port, durability off), the same command `scripts/test`, `scripts/scale-out`
/// and the benchmark harness use. As there, the cluster belongs to the `postgres` user when the
/// tests run as root (PostgreSQL refuses to run as root).
///
/// Contract: ``remove()`` stops the server (immediate mode) and deletes the directory; call it
/// in a `defer` right after ``create(passwordAuthentication:)`` or ``makeReplica()``.
final class ThrowawayPostgres: Sendable {
    let directory: String
    let port: Int
    let binDirectory: String
    /// The superuser, `spout`, connecting without a password over local sockets and (with
    /// trust authentication) TCP.
    var adminURL: String { "postgresql://spout@127.0.0.1:\(self.port)/postgres" }

    private init(directory: String, port: Int, binDirectory: String) {
        self.directory = directory
        self.port = port
        self.binDirectory = binDirectory
    }

    /// The newest `/usr/lib/postgresql/*/bin` with `initdb`, if any.
    static var binDirectory: String? {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap { Int($0) }.sorted()
        for version in versions.reversed() {
            let bin = "\(root)/\(version)/bin"
            if FileManager.default.isExecutableFile(atPath: bin + "/initdb") { return bin }
        }
        return nil
    }

    /// Whether the tests that make their own cluster run: the server binaries exist, or
    /// PostgreSQL is required (`CI=true`), in which case a missing server fails them.
    static var isAvailable: Bool { self.binDirectory != nil || TestDatabases.postgresRequired }

    /// `scripts/throwaway-postgres`.
    static var command: String { TestFixtures.repositoryRoot.appendingPathComponent("scripts/throwaway-postgres").path }

    /// Creates and starts a cluster. With `passwordAuthentication`, TCP connections need a
    /// password (scram-sha-256) and local socket connections stay trusted. With `tls`, the
    /// server offers TLS with a self-signed certificate (``certificate``, ``certificateKey``).
    /// A `launcher` (a program and its arguments that end by running the rest, such as
    /// `unshare … sh -c '… exec "$@"' sh`) runs `scripts/throwaway-postgres`, so the server runs
    /// where the launcher puts it.
    /// `settings` are server settings beside the script's own (which they override).
    static func create(
        passwordAuthentication: Bool = false, tls: Bool = false, settings: [String: String] = [:], launcher: [String] = []
    ) throws -> ThrowawayPostgres {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-pg-\(UUID().uuidString)").path
        let options = (passwordAuthentication ? ["--password-auth"] : []) + (tls ? ["--tls"] : []) + Self.options(settings)
        return try Self.started(directory, ["start", directory] + options, launcher: launcher)
    }

    /// `--set NAME=VALUE` for each setting, in a stable order.
    private static func options(_ settings: [String: String]) -> [String] {
        settings.sorted { $0.key < $1.key }.flatMap { ["--set", "\($0.key)=\($0.value)"] }
    }

    var dataDirectory: String { self.directory + "/data" }

    /// The server's process id (the first line of `postmaster.pid`).
    func postmasterPID() throws -> Int32 {
        let text = try String(contentsOfFile: self.dataDirectory + "/postmaster.pid", encoding: .utf8)
        guard let pid = text.split(separator: "\n").first.flatMap({ Int32($0) }) else {
            throw RawSocket.Failure(description: "no process id in postmaster.pid")
        }
        return pid
    }

    /// The server's certificate (PEM) of a cluster made with `tls`: self-signed for `127.0.0.1`
    /// and `localhost`, so it is also the root a client verifies it with.
    var certificate: String { self.dataDirectory + "/server.crt" }
    /// The certificate's private key (PEM).
    var certificateKey: String { self.dataDirectory + "/server.key" }

    /// A streaming replica of this cluster (`pg_basebackup -R`) in a directory of its own,
    /// started on another free port. Call ``remove()`` on it as on any cluster.
    /// `settings` are the replica's own (its copy of this cluster's configuration is read first).
    func makeReplica(settings: [String: String] = [:]) throws -> ThrowawayPostgres {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-pg-replica-\(UUID().uuidString)").path
        return try Self.started(directory, ["replica", self.directory, directory] + Self.options(settings))
    }

    /// Stops the server at once, as a failing machine would (immediate mode: no checkpoint,
    /// every session cut), keeping the cluster.
    func crash() throws {
        try Self.run(Self.command, ["crash", self.directory])
    }

    /// Ends a replica's recovery: it becomes a primary; returns once it takes writes.
    func promote() throws {
        try Self.run(Self.command, ["promote", self.directory])
    }

    /// Makes this stopped former primary a streaming replica of `primary` (`pg_rewind -R`: both
    /// need `wal_log_hints` and `full_page_writes` on, and this one's WAL back to where they
    /// diverged, `wal_keep_size`) and starts it on its own port.
    func rejoin(following primary: ThrowawayPostgres) throws {
        try Self.run(Self.command, ["rejoin", self.directory, primary.directory])
    }

    /// Runs `scripts/throwaway-postgres` with `arguments`, which start a cluster in `directory`,
    /// and reads the port from the URL it prints.
    private static func started(_ directory: String, _ arguments: [String], launcher: [String] = []) throws -> ThrowawayPostgres {
        guard let bin = self.binDirectory else {
            throw RawSocket.Failure(description: "PostgreSQL server binaries (initdb) not found under /usr/lib/postgresql")
        }
        let command = launcher + [Self.command] + arguments
        let result = try Self.run(command[0], Array(command.dropFirst()))
        let url = result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let port = url.split(separator: ":").last.flatMap({ Int($0) }) else {
            try? FileManager.default.removeItem(atPath: directory)
            throw RawSocket.Failure(description: "scripts/throwaway-postgres printed no URL: \(url)\n\(result.standardError)")
        }
        return ThrowawayPostgres(directory: directory, port: port, binDirectory: bin)
    }

    /// Starts the server again after ``stop()``, on its port, and waits until it accepts
    /// connections.
    func start() throws {
        try Self.run(Self.command, ["resume", self.directory])
    }

    /// Stops the server with a fast shutdown (every session disconnected), keeping the cluster.
    func stop() throws {
        try Self.run(Self.command, ["pause", self.directory])
    }

    /// Runs SQL as the superuser through `psql` on the local socket (so it works with password
    /// authentication on TCP).
    func psql(_ sql: String, database: String = "postgres") throws {
        let arguments = ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", self.directory, "-p", "\(self.port)", "-U", "spout", "-d", database, "-c", sql]
        if getuid() == 0 {
            try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", self.binDirectory + "/psql"] + arguments)
        } else {
            try Self.run(self.binDirectory + "/psql", arguments)
        }
    }

    /// Stops the server if it runs and deletes the cluster.
    func remove() {
        _ = try? Self.run(Self.command, ["stop", self.directory], allowFailure: true)
    }

    @discardableResult
    private static func run(_ executable: String, _ arguments: [String], allowFailure: Bool = false) throws -> ChildProcess.Result {
        let result = try ChildProcess.run(executable: executable, arguments: arguments)
        if result.status != 0 && !allowFailure {
            throw RawSocket.Failure(description: "\(executable) \(arguments.joined(separator: " ")) failed (\(result.status)):\n\(result.standardError)\(result.standardOutput)")
        }
        return result
    }

    /// A TCP port nothing listens on right now (bound with port 0 and released).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawSocket.Failure(description: "socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw RawSocket.Failure(description: "bind() failed: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw RawSocket.Failure(description: "getsockname() failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
