import Foundation
import SpoutTestDatabases
import SpoutTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL cluster of one test's own (initdb into a temporary directory, a free port),
/// which the test may stop and start at will. As in `scripts/test`, the cluster belongs to the
/// `postgres` user when the tests run as root (PostgreSQL refuses to run as root).
///
/// Contract: ``remove()`` stops the server (immediate mode) and deletes the directory; call it
/// in a `defer` right after ``create(passwordAuthentication:)``.
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

    /// Creates and starts a cluster. With `passwordAuthentication`, TCP connections need a
    /// password (scram-sha-256) and local socket connections stay trusted.
    static func create(passwordAuthentication: Bool = false) throws -> ThrowawayPostgres {
        guard let bin = self.binDirectory else {
            throw RawSocket.Failure(description: "PostgreSQL server binaries (initdb) not found under /usr/lib/postgresql")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-pg-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        chmod(directory, 0o755)
        if getuid() == 0 {
            _ = try Self.run("/usr/sbin/useradd", ["--system", "--no-create-home", "postgres"], allowFailure: true)
            _ = try Self.run("/bin/chown", ["postgres", directory])
        }
        let cluster = ThrowawayPostgres(directory: directory, port: try Self.freePort(), binDirectory: bin)
        let authentication = passwordAuthentication
            ? ["--auth-local=trust", "--auth-host=scram-sha-256"] : ["--auth=trust"]
        try cluster.runAsOwner(
            "initdb", ["-D", cluster.dataDirectory, "-U", "spout", "-E", "UTF8", "--locale=C", "--no-sync"] + authentication)
        try cluster.start()
        return cluster
    }

    var dataDirectory: String { self.directory + "/data" }

    /// A streaming replica of this cluster: `pg_basebackup -R` (which writes `standby.signal`
    /// and `primary_conninfo`) into a directory of its own, started on another free port.
    /// Call ``remove()`` on it as on any cluster.
    func makeReplica() throws -> ThrowawayPostgres {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-pg-replica-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        chmod(directory, 0o755)
        if getuid() == 0 { _ = try Self.run("/bin/chown", ["postgres", directory]) }
        let replica = ThrowawayPostgres(directory: directory, port: try Self.freePort(), binDirectory: self.binDirectory)
        try replica.runAsOwner(
            "pg_basebackup",
            ["-h", "127.0.0.1", "-p", "\(self.port)", "-U", "spout", "-D", replica.dataDirectory, "-R", "-X", "stream", "-c", "fast"])
        try replica.start()
        return replica
    }

    /// Starts the server and waits until it accepts connections.
    func start() throws {
        try self.runAsOwner("pg_ctl", [
            "-D", self.dataDirectory, "-l", self.directory + "/server.log", "-w", "-t", "60",
            "-o", "-p \(self.port) -k \(self.directory) -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=100",
            "start",
        ])
    }

    /// Stops the server: `fast` disconnects every session and shuts down cleanly.
    func stop(mode: String = "fast") throws {
        try self.runAsOwner("pg_ctl", ["-D", self.dataDirectory, "-m", mode, "-w", "stop"])
    }

    /// Runs SQL as the superuser through `psql` on the local socket (so it works with password
    /// authentication on TCP).
    func psql(_ sql: String, database: String = "postgres") throws {
        try self.runAsOwner("psql", ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", self.directory, "-p", "\(self.port)", "-U", "spout", "-d", database, "-c", sql])
    }

    /// Stops the server if it runs and deletes the cluster.
    func remove() {
        _ = try? self.runAsOwner("pg_ctl", ["-D", self.dataDirectory, "-m", "immediate", "-w", "stop"], allowFailure: true)
        try? FileManager.default.removeItem(atPath: self.directory)
    }

    @discardableResult
    private func runAsOwner(_ tool: String, _ arguments: [String], allowFailure: Bool = false) throws -> ChildProcess.Result {
        let path = self.binDirectory + "/" + tool
        if getuid() == 0 {
            return try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", path] + arguments, allowFailure: allowFailure)
        }
        return try Self.run(path, arguments, allowFailure: allowFailure)
    }

    @discardableResult
    private static func run(_ executable: String, _ arguments: [String], allowFailure: Bool = false) throws -> ChildProcess.Result {
        // The child's working directory is ours; PostgreSQL's tools only need it readable,
        // which /tmp-based test directories are not guaranteed to be for `postgres`.
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
