import Foundation
import SpoutTestDatabases
import SpoutTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A reverse proxy from Debian's packages in front of a Spout on loopback, configured the way
/// an operator would put it there, with the one upstream connection it keeps reused for
/// every client's request (so a connection Spout leaves in a bad state meets the next client):
///
/// - nginx (`nginx-light`) forwarding WebSockets (`Upgrade` and `Connection` passed on, as its
///   documentation shows), `keepalive 1`;
/// - haproxy 2.6 in HTTP mode with `http-reuse always` and one connection to the server.
///
/// A daemon of its own in a temporary directory, on a free port. Contract: ``stop()`` stops
/// it and deletes the directory.
final class ThrowawayProxy: Sendable {
    enum Kind: String, Sendable, CaseIterable, CustomTestStringConvertible {
        case nginx
        case haproxy

        var executable: String { self == .nginx ? "/usr/sbin/nginx" : "/usr/sbin/haproxy" }
        var testDescription: String { self.rawValue }
    }

    let kind: Kind
    let directory: String
    let port: Int

    /// Whether these tests run: the proxy is installed, or nothing may be skipped (`CI=true`:
    /// `scripts/test` installs it), in which case a missing one fails them.
    static func isAvailable(_ kind: Kind) -> Bool {
        FileManager.default.isExecutableFile(atPath: kind.executable) || TestDatabases.postgresRequired
    }

    private init(kind: Kind, directory: String, port: Int) {
        self.kind = kind
        self.directory = directory
        self.port = port
    }

    /// Starts `kind` in front of `upstreamPort` and returns once it accepts connections.
    static func start(_ kind: Kind, upstreamPort: Int) async throws -> ThrowawayProxy {
        guard FileManager.default.isExecutableFile(atPath: kind.executable) else {
            throw RawSocket.Failure(description: "\(kind.executable) not found: apt-get install \(kind == .nginx ? "nginx-light" : "haproxy")")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-\(kind.rawValue)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory + "/temp", withIntermediateDirectories: true)
        let port = try ThrowawayPostgres.freePort()
        let proxy = ThrowawayProxy(kind: kind, directory: directory, port: port)
        let configuration = directory + "/proxy.conf"
        try proxy.configuration(upstreamPort: upstreamPort).write(toFile: configuration, atomically: true, encoding: .utf8)
        let arguments =
            kind == .nginx
            ? ["-p", directory, "-c", configuration, "-e", directory + "/error.log"]
            : ["-D", "-f", configuration, "-p", directory + "/proxy.pid"]
        do {
            let started = try await ChildProcess.run(executable: kind.executable, arguments: arguments)
            guard started.status == 0 else {
                throw RawSocket.Failure(description: "\(kind) failed to start (\(started.status)): \(started.standardError)")
            }
            let deadline = ContinuousClock.now + .seconds(20)
            while (try? LoopbackSocket.connect(port: port, timeout: 1)).map({ close($0) }) == nil {
                guard ContinuousClock.now < deadline else { throw RawSocket.Failure(description: "\(kind) did not listen on \(port)") }
                try await Task.sleep(for: .milliseconds(50))
            }
        } catch {
            proxy.stop()
            throw error
        }
        return proxy
    }

    /// Runs `body` with `kind` in front of `upstreamPort`, and stops it afterwards.
    static func with<Result>(_ kind: Kind, upstreamPort: Int, _ body: (ThrowawayProxy) async throws -> Result) async throws -> Result {
        let proxy = try await Self.start(kind, upstreamPort: upstreamPort)
        defer { proxy.stop() }
        return try await body(proxy)
    }

    func stop() {
        if let pid = Daemon.pid(fromFile: self.directory + "/proxy.pid") { Daemon.stop(pid, signals: [SIGTERM, SIGKILL]) }
        try? FileManager.default.removeItem(atPath: self.directory)
    }

    private func configuration(upstreamPort: Int) -> String {
        switch self.kind {
        case .nginx:
            // As root, nginx's worker runs as nobody, whose group Debian calls nogroup.
            let user = geteuid() == 0 ? "user nobody nogroup;" : ""
            return """
                \(user)
                worker_processes 1;
                pid \(self.directory)/proxy.pid;
                error_log \(self.directory)/error.log warn;
                events { worker_connections 64; }
                http {
                    access_log off;
                    client_body_temp_path \(self.directory)/temp/body;
                    proxy_temp_path \(self.directory)/temp/proxy;
                    fastcgi_temp_path \(self.directory)/temp/fastcgi;
                    uwsgi_temp_path \(self.directory)/temp/uwsgi;
                    scgi_temp_path \(self.directory)/temp/scgi;
                    map $http_upgrade $connection_upgrade { default upgrade; '' ''; }
                    upstream spout {
                        server 127.0.0.1:\(upstreamPort);
                        keepalive 1;
                    }
                    server {
                        listen 127.0.0.1:\(self.port);
                        location / {
                            proxy_pass http://spout;
                            proxy_http_version 1.1;
                            proxy_set_header Upgrade $http_upgrade;
                            proxy_set_header Connection $connection_upgrade;
                            proxy_read_timeout 30s;
                        }
                    }
                }

                """
        case .haproxy:
            return """
                global
                    maxconn 64
                defaults
                    mode http
                    timeout connect 5s
                    timeout client 30s
                    timeout server 30s
                    http-reuse always
                frontend front
                    bind 127.0.0.1:\(self.port)
                    default_backend spout
                backend spout
                    server spout 127.0.0.1:\(upstreamPort) maxconn 1

                """
        }
    }
}
