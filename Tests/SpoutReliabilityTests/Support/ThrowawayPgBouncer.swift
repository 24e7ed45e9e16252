import Foundation
import SpoutTestDatabases
import SpoutTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The distribution's PgBouncer (`/usr/sbin/pgbouncer`, Debian's package) in front of a
/// ``ThrowawayPostgres``, in `pool_mode = transaction`: a server connection is lent to a client
/// for one transaction only, so named prepared statements and session settings do not survive
/// from one transaction to the next.
///
/// Contract: ``remove()`` stops PgBouncer and deletes its directory; call it in a `defer` right
/// after ``start(in:serverConnections:)``. As the cluster, it runs as `postgres` when the tests
/// run as root (PgBouncer refuses to run as root).
final class ThrowawayPgBouncer: Sendable {
    static let executable = "/usr/sbin/pgbouncer"

    let directory: String
    let port: Int

    private init(directory: String, port: Int) {
        self.directory = directory
        self.port = port
    }

    /// Whether the tests that need PgBouncer run: it is installed, or PostgreSQL is required
    /// (`CI=true`; `scripts/test` installs the package), in which case a missing one fails them.
    static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: self.executable) || TestDatabases.postgresRequired
    }

    /// Starts PgBouncer on a free loopback port in front of `cluster`, with at most
    /// `serverConnections` server connections per database and user, and waits until it accepts
    /// connections. It lets in the cluster's `spout` and the `users` given (trust: no password).
    static func start(in front: ThrowawayPostgres, serverConnections: Int, users: [String] = []) throws -> ThrowawayPgBouncer {
        guard FileManager.default.isExecutableFile(atPath: self.executable) else {
            throw RawSocket.Failure(description: "PgBouncer not found at \(self.executable): apt-get install pgbouncer")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-pgbouncer-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let bouncer = ThrowawayPgBouncer(directory: directory, port: try ThrowawayPostgres.freePort())
        let configuration = """
            [databases]
            * = host=127.0.0.1 port=\(front.port)

            [pgbouncer]
            listen_addr = 127.0.0.1
            listen_port = \(bouncer.port)
            unix_socket_dir =
            auth_type = trust
            auth_file = \(directory)/userlist.txt
            pool_mode = transaction
            default_pool_size = \(serverConnections)
            max_client_conn = 500
            logfile = \(directory)/pgbouncer.log
            pidfile = \(directory)/pgbouncer.pid

            """
        try configuration.write(toFile: directory + "/pgbouncer.ini", atomically: true, encoding: .utf8)
        let userlist = (["spout"] + users).map { "\"\($0)\" \"\"\n" }.joined()
        try userlist.write(toFile: directory + "/userlist.txt", atomically: true, encoding: .utf8)
        var command = [self.executable, "-d", directory + "/pgbouncer.ini"]
        if getuid() == 0 {
            _ = try ChildProcess.run(executable: "/bin/chown", arguments: ["-R", "postgres", directory])
            command = ["/usr/sbin/runuser", "-u", "postgres", "--"] + command
        }
        let result = try ChildProcess.run(executable: command[0], arguments: Array(command.dropFirst()))
        guard result.status == 0 else {
            throw RawSocket.Failure(description: "pgbouncer failed to start (\(result.status)): \(result.standardError)\(bouncer.log)")
        }
        let deadline = ContinuousClock.now + .seconds(15)
        // Listening comes before the daemon writes its pid file: wait for both, so remove()
        // always knows whom to stop.
        while bouncer.pid == nil || (try? LoopbackSocket.connect(port: bouncer.port, timeout: 1)).map({ close($0) }) == nil {
            guard ContinuousClock.now < deadline else {
                bouncer.remove()
                throw RawSocket.Failure(description: "pgbouncer did not listen on \(bouncer.port): \(bouncer.log)")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return bouncer
    }

    /// A URL for `database` through PgBouncer, as `user`.
    func url(database: String, user: String = "spout") -> String {
        "postgresql://\(user)@127.0.0.1:\(self.port)/\(database)"
    }

    var log: String {
        (try? String(contentsOfFile: self.directory + "/pgbouncer.log", encoding: .utf8)) ?? ""
    }

    /// Stops PgBouncer and deletes its directory. SIGTERM is an immediate shutdown up to
    /// PgBouncer 1.22 (Debian 12 ships 1.18); from 1.23 it waits for the clients, and a second
    /// SIGTERM is immediate. SIGKILL if it is still there after that.
    func remove() {
        if let pid = self.pid { Daemon.stop(pid, signals: [SIGTERM, SIGTERM, SIGKILL]) }
        try? FileManager.default.removeItem(atPath: self.directory)
    }

    /// The daemon's process id, from its pid file (nil once the directory is gone).
    var pid: pid_t? { Daemon.pid(fromFile: self.directory + "/pgbouncer.pid") }
}
