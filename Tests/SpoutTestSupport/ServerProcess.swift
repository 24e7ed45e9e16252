import Foundation
import SpoutTestSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `spout serve` in a child process: its port, its log, its memory and descriptors, signals and
/// its exit status.
///
/// Contract: ``start(arguments:environment:)`` returns once the child logged
/// `listening on http://HOST:PORT` (or throws with its log when it exited or never did); call
/// ``stop()`` (or ``waitForExit()`` after a signal) before the value goes away, so that no child
/// outlives its test.
final class ServerProcess: Sendable {
    let pid: pid_t
    let port: Int
    let logPath: String
    private let directory: String
    private let exitStatus = Mutex<Int32?>(nil)

    private init(pid: pid_t, port: Int, logPath: String, directory: String) {
        self.pid = pid
        self.port = port
        self.logPath = logPath
        self.directory = directory
    }

    /// Starts `spout serve` with `arguments` (add `--config`, `--database`…); `--port 0` is
    /// added. `environment` is added to the test process's environment, without its `SPOUT_*`
    /// variables.
    static func start(arguments: [String], environment: [String: String] = [:]) async throws -> ServerProcess {
        let executable = try ChildProcess.spoutExecutable()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-serve-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let logPath = (directory as NSString).appendingPathComponent("log")

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([executable, "serve", "--port", "0"] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var variables = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SPOUT_") }
        // The pets' writes need tokens: TestTokens signs them with this secret.
        variables["SPOUT_JWT_SECRET"] = TestTokens.secret
        for (key, value) in environment { variables[key] = value }
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = ChildProcess.spawn(&pid, executable, &actions, argv, envp)
        guard spawned == 0 else { throw RawSocket.Failure(description: "posix_spawn failed: \(spawned)") }

        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            if let port = Self.listeningPort(in: log) {
                return ServerProcess(pid: pid, port: port, logPath: logPath, directory: directory)
            }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                throw RawSocket.Failure(description: "spout serve exited before listening (status \(status)):\n\(log)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        throw RawSocket.Failure(description: "spout serve did not log 'listening on' in time")
    }

    static func listeningPort(in log: String) -> Int? {
        guard let range = log.range(of: "listening on http://") else { return nil }
        let rest = log[range.upperBound...]
        guard let colon = rest.firstIndex(of: ":") else { return nil }
        let digits = rest[rest.index(after: colon)...].prefix { $0.isNumber }
        return Int(digits)
    }

    /// Everything the child wrote to stdout and stderr so far.
    var log: String { (try? String(contentsOfFile: self.logPath, encoding: .utf8)) ?? "" }

    /// Resident memory now (`VmRSS` of `/proc/<pid>/status`), in bytes.
    var residentBytes: Int? { ProcessProbe.statusField("VmRSS", pid: self.pid).map { $0 * 1024 } }

    /// Peak resident memory so far (`VmHWM`), in bytes.
    var peakResidentBytes: Int? { ProcessProbe.statusField("VmHWM", pid: self.pid).map { $0 * 1024 } }

    /// Open file descriptors of the child.
    var openDescriptors: Int? { ProcessProbe.descriptorCount(pid: self.pid) }

    /// Whether the child is still running (it has not exited).
    var isRunning: Bool {
        if self.exitStatus.withLock({ $0 }) != nil { return false }
        var status: Int32 = 0
        if waitpid(self.pid, &status, WNOHANG) == self.pid {
            self.exitStatus.withLock { $0 = Self.decode(status) }
            return false
        }
        return true
    }

    func get(_ target: String, headers: [(String, String)] = [], timeout: TimeInterval = 30) async throws -> RawResponse {
        try await RawHTTP.get(port: self.port, target, headers: headers, timeout: timeout)
    }

    func signal(_ number: Int32) {
        kill(self.pid, number)
    }

    /// Waits for the child to exit (at most `limit`, then kills it and returns nil) and returns
    /// its exit status (128 + n after signal n).
    func waitForExit(within limit: Duration = .seconds(60)) async -> Int32? {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if !self.isRunning { return self.exitStatus.withLock { $0 } }
            try? await Task.sleep(for: .milliseconds(50))
        }
        kill(self.pid, SIGKILL)
        var status: Int32 = 0
        waitpid(self.pid, &status, 0)
        return nil
    }

    /// Stops the child (SIGTERM, then SIGKILL after 15 s) and removes its log directory.
    func stop() async {
        if self.isRunning {
            self.signal(SIGTERM)
            _ = await self.waitForExit(within: .seconds(15))
        }
        try? FileManager.default.removeItem(atPath: self.directory)
    }

    private static func decode(_ status: Int32) -> Int32 {
        (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}

/// Resources of a process, read from `/proc`.
enum ProcessProbe {
    /// A `kB` field of `/proc/<pid>/status` (`VmRSS`, `VmHWM`), in kB.
    static func statusField(_ name: String, pid: pid_t) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
            return Int(line.dropFirst(name.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
        }
        return nil
    }

    static func descriptorCount(pid: pid_t) -> Int? {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count
    }

    /// Open file descriptors of the test process.
    static var ownDescriptorCount: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.count ?? 0
    }

    /// TCP sockets on this machine whose local port is `port`, except listening ones (the
    /// server's end of its client connections, in any state but TIME_WAIT, which holds no
    /// descriptor).
    static func serverSideSockets(port: Int) -> Int {
        var count = 0
        for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count > 3 else { continue }
                let local = fields[1].split(separator: ":")
                guard local.count == 2, Int(local[1], radix: 16) == port else { continue }
                let state = fields[3]
                // 0A: LISTEN, 06: TIME_WAIT.
                if state != "0A" && state != "06" { count += 1 }
            }
        }
        return count
    }
}
