import Foundation
import SpoutTestDatabases
import SpoutTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Debian's nginx balancing plain HTTP round-robin over Spouts on fixed loopback ports, as
/// docs/deploy/scale-out.nginx.conf does: a daemon (``Daemon``) with a throwaway configuration
/// in a temporary directory, upstream keep-alive, streams unbuffered. The Spouts behind it may
/// stop and start again on the same ports (nginx tries the other one meanwhile).
///
/// Contract: ``stop()`` stops nginx and deletes its directory; call it when done.
final class RoundRobinNginx: Sendable {
    static let executable = "/usr/sbin/nginx"

    let directory: String
    let port: Int

    /// Whether the tests that need it run: nginx is installed, or nothing may be skipped
    /// (`CI=true`: `scripts/test` installs it), in which case a missing one fails them.
    static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: self.executable) || TestDatabases.postgresRequired
    }

    private init(directory: String, port: Int) {
        self.directory = directory
        self.port = port
    }

    /// How nginx passes requests and responses on.
    enum Proxying {
        /// As docs/deploy/scale-out.nginx.conf says: HTTP/1.1 to the upstream, kept alive,
        /// responses unbuffered.
        case documented
        /// `proxy_pass` alone, as a configuration that knows nothing of Spout has it: HTTP/1.0
        /// to the upstream, a connection per request, responses buffered (nginx's defaults).
        case nginxDefaults
    }

    /// The `location` lines of ``Proxying/documented`` beside `proxy_pass`.
    private static let documentedProxying = """
                    proxy_http_version 1.1;
                    proxy_set_header Connection "";
                    proxy_buffering off;
        """

    /// Starts nginx in front of the Spouts on `upstreams` (ports on 127.0.0.1) and returns once
    /// it accepts connections.
    static func start(upstreams: [Int], proxying: Proxying = .documented) async throws -> RoundRobinNginx {
        guard FileManager.default.isExecutableFile(atPath: self.executable) else {
            throw RawSocket.Failure(description: "nginx not found at \(self.executable): apt-get install nginx-light")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-balancer-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory + "/temp", withIntermediateDirectories: true)
        let nginx = RoundRobinNginx(directory: directory, port: try ThrowawayPostgres.freePort())
        // As root, nginx's default worker user is nobody with group nobody, which Debian does
        // not have: name the group.
        let user = geteuid() == 0 ? "user nobody nogroup;" : ""
        let configuration = """
            \(user)
            worker_processes 1;
            pid \(directory)/nginx.pid;
            error_log \(directory)/error.log warn;
            events { worker_connections 256; }
            http {
                access_log \(directory)/access.log;
                client_body_temp_path \(directory)/temp/body;
                proxy_temp_path \(directory)/temp/proxy;
                fastcgi_temp_path \(directory)/temp/fastcgi;
                uwsgi_temp_path \(directory)/temp/uwsgi;
                scgi_temp_path \(directory)/temp/scgi;
                upstream spout {
            \(upstreams.map { "        server 127.0.0.1:\($0) max_fails=0;" }.joined(separator: "\n"))
                    keepalive 8;
                }
                server {
                    listen 127.0.0.1:\(nginx.port);
                    location / {
                        proxy_pass http://spout;
            \(proxying == .documented ? Self.documentedProxying : "")
                    }
                }
            }

            """
        try configuration.write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
        do {
            let started = try await ChildProcess.run(
                executable: self.executable, arguments: ["-p", directory, "-c", directory + "/nginx.conf", "-e", directory + "/error.log"])
            guard started.status == 0 else {
                throw RawSocket.Failure(description: "nginx failed to start (\(started.status)): \(started.standardError)\(nginx.errorLog)")
            }
            let deadline = ContinuousClock.now + .seconds(20)
            while (try? LoopbackSocket.connect(port: nginx.port, timeout: 1)).map({ close($0) }) == nil {
                guard ContinuousClock.now < deadline else { throw RawSocket.Failure(description: "nginx did not listen:\n\(nginx.errorLog)") }
                try await Task.sleep(for: .milliseconds(50))
            }
        } catch {
            nginx.stop()
            throw error
        }
        return nginx
    }

    var errorLog: String { (try? String(contentsOfFile: self.directory + "/error.log", encoding: .utf8)) ?? "" }

    func stop() {
        if let pid = Daemon.pid(fromFile: self.directory + "/nginx.pid") { Daemon.stop(pid, signals: [SIGTERM, SIGKILL]) }
        try? FileManager.default.removeItem(atPath: self.directory)
    }
}
