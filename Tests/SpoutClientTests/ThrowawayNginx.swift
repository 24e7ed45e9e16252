import Foundation
import NIOCore
import NIOPosix
import SpoutTestDatabases
import SpoutTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Debian's nginx (`/usr/sbin/nginx`) terminating TLS in front of a ``LiveSpout``, as an app's
/// HTTPS traffic would reach Spout: a daemon (``Daemon``: started as a service starts it, its
/// master named by its pid file) with a throwaway configuration in a temporary directory, one `listen … ssl` port per certificate
/// it is given, upstream keep-alive, and streams passed through unbuffered (`proxy_buffering
/// off`; Spout compresses, nginx does not).
///
/// Its access log has one line per request: `CONNECTION REQUESTS STATUS BYTES_SENT "REQUEST"`,
/// where CONNECTION is nginx's serial number of the client's TCP connection (`$connection`)
/// and BYTES_SENT what nginx wrote to the client for it, headers included, before TLS
/// (`$bytes_sent`): the bytes a client downloads.
///
/// Runs as the current user; as root, nginx's worker runs as nobody, and everything it needs
/// (certificates, logs, temporary folders) is opened or prepared by the root master first.
///
/// Contract: ``stop()`` stops nginx and deletes its directory; call it when done (``with``).
final class ThrowawayNginx: Sendable {
    static let executable = "/usr/sbin/nginx"

    /// One TLS listener: its port, and the certificate and key it presents.
    struct Listener: Sendable {
        var port: Int
        var certificate: String
        var key: String
    }

    let directory: String
    let listeners: [Listener]

    /// Whether the nginx tests run: nginx is installed, or the tests must not skip anything
    /// (`CI=true`: `scripts/test` installs the package), in which case a missing one fails them.
    static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: self.executable) || TestDatabases.postgresRequired
    }

    private init(directory: String, listeners: [Listener]) {
        self.directory = directory
        self.listeners = listeners
    }

    /// The `https://127.0.0.1:PORT` URL of listener `index`.
    func baseURL(_ index: Int = 0) -> URL {
        URL(string: "https://127.0.0.1:\(self.listeners[index].port)")!
    }

    /// Starts nginx with one TLS listener per `(certificate, key)`, proxying to `upstreamPort`,
    /// and returns once every listener accepts connections.
    static func start(upstreamPort: Int, certificates: [(certificate: String, key: String)]) async throws -> ThrowawayNginx {
        guard FileManager.default.isExecutableFile(atPath: self.executable) else {
            throw Failure(description: "nginx not found at \(self.executable): apt-get install nginx-light")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-nginx-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory + "/temp", withIntermediateDirectories: true)
        var listeners: [Listener] = []
        for pair in certificates {
            listeners.append(Listener(port: try await self.freePort(), certificate: pair.certificate, key: pair.key))
        }
        let nginx = ThrowawayNginx(directory: directory, listeners: listeners)
        try nginx.configuration(upstreamPort: upstreamPort).write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
        do {
            // The foreground nginx exits once its master runs in the background, listening.
            let started = try await ChildProcess.run(
                executable: self.executable, arguments: ["-p", directory, "-c", directory + "/nginx.conf", "-e", directory + "/error.log"])
            guard started.status == 0 else {
                throw Failure(description: "nginx failed to start (\(started.status)): \(started.standardError)\(nginx.errorLog)")
            }
            try await nginx.waitUntilListening()
        } catch {
            nginx.stop()
            throw error
        }
        return nginx
    }

    /// Runs `body` with nginx started in front of `server`, and stops nginx afterwards.
    static func with<Result>(
        in front: LiveSpout, certificates: [(certificate: String, key: String)], _ body: (ThrowawayNginx) async throws -> Result
    ) async throws -> Result {
        let nginx = try await Self.start(upstreamPort: front.baseURL.port ?? 0, certificates: certificates)
        defer { nginx.stop() }
        return try await body(nginx)
    }

    /// The access log's lines so far, parsed.
    func accessLog() throws -> [AccessLogLine] {
        let text = (try? String(contentsOfFile: self.directory + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap(AccessLogLine.init)
    }

    /// The access log's lines that match `isWanted`, once there are at least `count` of them
    /// or 5 s have passed (nginx writes a request's line after its last byte went out, so a
    /// client that stopped reading at its last row can look before the line is there).
    func accessLog(atLeast count: Int, where isWanted: (AccessLogLine) -> Bool) async throws -> [AccessLogLine] {
        try await poll(within: .seconds(5), every: .milliseconds(50), { try self.accessLog().filter(isWanted) }, until: { $0.count >= count })
    }

    /// One line of the access log.
    struct AccessLogLine: Sendable {
        var connection: Int
        var status: Int
        var bytesSent: Int
        var request: String

        init?(_ line: Substring) {
            let fields = line.split(separator: " ", maxSplits: 4)
            guard fields.count == 5, let connection = Int(fields[0]), let status = Int(fields[2]), let bytes = Int(fields[3]) else {
                return nil
            }
            self.connection = connection
            self.status = status
            self.bytesSent = bytes
            self.request = String(fields[4])
        }
    }

    /// nginx's error log (for failure messages).
    var errorLog: String {
        (try? String(contentsOfFile: self.directory + "/error.log", encoding: .utf8)) ?? ""
    }

    /// The master's process id, from its pid file (nil before it is written, and once the
    /// directory is gone).
    var pid: pid_t? { Daemon.pid(fromFile: self.directory + "/nginx.pid") }

    /// Stops nginx (SIGTERM: a fast shutdown; SIGKILL if it is still there 3 s later) and
    /// deletes its directory.
    func stop() {
        if let pid = self.pid { Daemon.stop(pid, signals: [SIGTERM, SIGKILL]) }
        try? FileManager.default.removeItem(atPath: self.directory)
    }

    private func configuration(upstreamPort: Int) -> String {
        let servers = self.listeners.map { listener in
            """
                server {
                    listen 127.0.0.1:\(listener.port) ssl;
                    ssl_certificate \(listener.certificate);
                    ssl_certificate_key \(listener.key);
                    location / {
                        proxy_pass http://spout;
                        proxy_http_version 1.1;
                        proxy_set_header Connection "";
                        proxy_buffering off;
                    }
                }
            """
        }
        // As root, nginx's default worker user is nobody with group nobody, which Debian does
        // not have: name the group. As another user the directive would only warn: leave it out.
        let user = geteuid() == 0 ? "user nobody nogroup;" : ""
        return """
            \(user)
            worker_processes 1;
            pid \(self.directory)/nginx.pid;
            error_log \(self.directory)/error.log warn;
            events { worker_connections 256; }
            http {
                log_format spout '$connection $connection_requests $status $bytes_sent "$request"';
                access_log \(self.directory)/access.log spout;
                client_body_temp_path \(self.directory)/temp/body;
                proxy_temp_path \(self.directory)/temp/proxy;
                fastcgi_temp_path \(self.directory)/temp/fastcgi;
                uwsgi_temp_path \(self.directory)/temp/uwsgi;
                scgi_temp_path \(self.directory)/temp/scgi;
                keepalive_timeout 75s;
                keepalive_requests 10000;
                upstream spout {
                    server 127.0.0.1:\(upstreamPort);
                    keepalive 8;
                }
            \(servers.joined(separator: "\n"))
            }

            """
    }

    /// Waits for the pid file (so ``stop()`` always knows whom to stop) and every listener.
    private func waitUntilListening() async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while self.pid == nil {
            guard ContinuousClock.now < deadline else { throw Failure(description: "nginx wrote no pid file:\n\(self.errorLog)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        for listener in self.listeners {
            while (try? LoopbackSocket.connect(port: listener.port, timeout: 1)).map({ close($0) }) == nil {
                guard let pid = self.pid, Daemon.isRunning(pid), ContinuousClock.now < deadline else {
                    throw Failure(description: "nginx did not listen on \(listener.port):\n\(self.errorLog)")
                }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    /// A port nothing listens on right now (bound and released).
    private static func freePort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress?.port ?? 0
        try await channel.close()
        return port
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }
}
