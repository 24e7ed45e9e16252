import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `spout serve` in a child process: its port, its log, its memory and descriptors, signals and
/// its exit status. The one way tests run the server as a separate process; ``ServedSpout``
/// stages a user's checkout and runs it through this.
///
/// Started with ``ChildProcess/spawn(_:_:_:_:_:)`` (the signal state a shell gives a program),
/// standard output and error to a log file, standard input from `/dev/null`.
///
/// Contract: ``start(arguments:environment:executable:prefix:workingDirectory:)`` returns once
/// the child logged `listening on http://HOST:PORT` (or throws with its log when it exited or
/// never did); call ``stop()`` (or ``waitForExit(within:)`` after a signal) before the value
/// goes away, so that no child outlives its test.
public final class ServerProcess: Sendable {
    public let pid: pid_t
    public let port: Int
    public let logPath: String
    private let directory: String
    private let exitStatus = Mutex<Int32?>(nil)

    private init(pid: pid_t, port: Int, logPath: String, directory: String) {
        self.pid = pid
        self.port = port
        self.logPath = logPath
        self.directory = directory
    }

    /// Starts `spout serve --port 0` followed by `arguments` (add `--config`, `--database`…).
    /// - Parameters:
    ///   - environment: added to the test process's environment, from which every `SPOUT_*`
    ///     variable is removed first.
    ///   - executable: the `spout` to run; ``ChildProcess/spoutExecutable()`` by default.
    ///   - prefix: a program and its arguments that exec the server (`setpriv … --`), or none;
    ///     the server keeps the process id (``pid``) the prefix started with.
    ///   - workingDirectory: where the server starts; the test process's by default.
    public static func start(
        arguments: [String], environment: [String: String] = [:], executable: String? = nil, prefix: [String] = [],
        workingDirectory: String? = nil
    ) async throws -> ServerProcess {
        let executable = try executable ?? ChildProcess.spoutExecutable()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-serve-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let logPath = (directory as NSString).appendingPathComponent("log")

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // The working directory through coreutils' `env --chdir`, which execs the rest: Swift's
        // Glibc module does not export `posix_spawn_file_actions_addchdir_np`.
        let prefix = (workingDirectory.map { ["/usr/bin/env", "--chdir=\($0)"] } ?? []) + prefix
        let program = prefix.first ?? executable
        let argv = (prefix + [executable, "serve", "--port", "0"] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var variables = ChildProcess.inheritedEnvironment
        for (key, value) in environment { variables[key] = value }
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = ChildProcess.spawn(&pid, program, &actions, argv, envp)
        guard spawned == 0 else {
            try? FileManager.default.removeItem(atPath: directory)
            throw RawSocket.Failure(description: "posix_spawn failed: \(spawned)")
        }

        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            if let port = Self.listeningPort(in: log) {
                return ServerProcess(pid: pid, port: port, logPath: logPath, directory: directory)
            }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                try? FileManager.default.removeItem(atPath: directory)
                throw RawSocket.Failure(description: "spout serve exited before listening (status \(status)):\n\(log)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: directory)
        throw RawSocket.Failure(description: "spout serve did not log 'listening on' in time:\n\(log)")
    }

    /// The port of the first `listening on http://HOST:PORT` line of `log`.
    public static func listeningPort(in log: String) -> Int? {
        guard let range = log.range(of: "listening on http://") else { return nil }
        let rest = log[range.upperBound...]
        guard let colon = rest.firstIndex(of: ":") else { return nil }
        let digits = rest[rest.index(after: colon)...].prefix { $0.isNumber }
        // Digits followed by something: the line was not cut in the middle of the port.
        guard !digits.isEmpty, digits.endIndex < rest.endIndex else { return nil }
        return Int(digits)
    }

    /// Everything the child wrote to stdout and stderr so far.
    public var log: String { (try? String(contentsOfFile: self.logPath, encoding: .utf8)) ?? "" }

    /// Resident memory now (`VmRSS` of `/proc/<pid>/status`), in bytes.
    public var residentBytes: Int? { ProcessProbe.statusField("VmRSS", pid: self.pid).map { $0 * 1024 } }

    /// Peak resident memory so far (`VmHWM`), in bytes.
    public var peakResidentBytes: Int? { ProcessProbe.statusField("VmHWM", pid: self.pid).map { $0 * 1024 } }

    /// Open file descriptors of the child.
    public var openDescriptors: Int? { ProcessProbe.descriptorCount(pid: self.pid) }

    /// Whether the child is still running (it has not exited).
    public var isRunning: Bool {
        if self.exitStatus.withLock({ $0 }) != nil { return false }
        var status: Int32 = 0
        if waitpid(self.pid, &status, WNOHANG) == self.pid {
            self.exitStatus.withLock { $0 = Self.decode(status) }
            return false
        }
        return true
    }

    public func get(_ target: String, headers: [(String, String)] = [], timeout: TimeInterval = 30) async throws -> HTTPTestResponse {
        try await RawHTTP.get(port: self.port, target, headers: headers, timeout: timeout)
    }

    public func signal(_ number: Int32) {
        kill(self.pid, number)
    }

    /// Waits for the child to exit (at most `limit`, then kills it and returns nil) and returns
    /// its exit status (128 + n after signal n).
    public func waitForExit(within limit: Duration = .seconds(60)) async -> Int32? {
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
    public func stop() async {
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
public enum ProcessProbe {
    /// A `kB` field of `/proc/<pid>/status` (`VmRSS`, `VmHWM`), in kB.
    public static func statusField(_ name: String, pid: pid_t) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
            return Int(line.dropFirst(name.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
        }
        return nil
    }

    public static func descriptorCount(pid: pid_t) -> Int? {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count
    }

    /// Open file descriptors of the test process.
    public static var ownDescriptorCount: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.count ?? 0
    }

    /// TCP sockets on this machine whose local port is `port`, except listening ones (the
    /// server's end of its client connections, in any state but TIME_WAIT, which holds no
    /// descriptor).
    public static func serverSideSockets(port: Int) -> Int {
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
