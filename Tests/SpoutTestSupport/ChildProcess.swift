import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs a program and reports its exit status, output and peak resident memory.
///
/// On Linux the peak is the child's own `VmHWM` from `/proc/PID/status`, sampled every 10 ms
/// until it exits (growth in its last few milliseconds can be missed). `wait4`'s `ru_maxrss`
/// would not do: `posix_spawn` execs from the parent's address space, and Linux carries that
/// address space's high-water mark into the child's `maxrss`, so a big test process would
/// make every child look big.
public enum ChildProcess {
    public struct Result: Sendable {
        public var status: Int32
        /// Standard output as UTF-8 text; ``outputBytes`` as written.
        public var standardOutput: String { String(decoding: self.outputBytes, as: UTF8.self) }
        public var outputBytes: [UInt8]
        public var standardError: String
        public var peakResidentBytes: Int
    }

    /// The variable naming the `spout` executable the tests run as a child process, when it is
    /// not the one built next to the tests: `scripts/test` sets it, under CI, to the static
    /// release binary it builds for the container (the program users run).
    public static let spoutExecutableVariable = "SPOUT_TEST_EXECUTABLE"

    /// The test process's environment without its `SPOUT_*` variables: what a child gets unless a
    /// test says otherwise. A variable the caller's shell exported (`SPOUT_JWT_SECRET`,
    /// `SPOUT_PORT`) would otherwise configure every Spout a test starts; the variables that steer
    /// the tests themselves (`SPOUT_TEST_*`) are read by the test process, not by its children.
    public static var inheritedEnvironment: [String: String] {
        ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SPOUT_") }
    }

    /// The `spout` executable the tests run: the one ``spoutExecutableVariable`` names, or else
    /// the one built next to the test bundle.
    ///
    /// - Throws: when the variable names no executable file (a typo must not silently test
    ///   another build), or when nothing is built next to the tests.
    public static func spoutExecutable() throws -> String {
        if let path = ProcessInfo.processInfo.environment[Self.spoutExecutableVariable], !path.isEmpty {
            struct NotExecutable: Error, CustomStringConvertible {
                var path: String
                var description: String { "\(ChildProcess.spoutExecutableVariable) names \(self.path), which is not an executable file" }
            }
            guard FileManager.default.isExecutableFile(atPath: path) else { throw NotExecutable(path: path) }
            return path
        }
        return try self.builtExecutable(named: "spout")
    }

    /// An executable product of the package (`spout`, `spout-client-example`) built next to
    /// the test bundle.
    public static func builtExecutable(named name: String) throws -> String {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [bundle, bundle.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        struct NotBuilt: Error, CustomStringConvertible {
            var name: String
            var description: String { "the \(self.name) executable is not built next to the tests (run swift build --build-tests first)" }
        }
        throw NotBuilt(name: name)
    }

    /// Like ``run(executable:arguments:environment:)``, but waits on a thread of its own, so a
    /// long child does not hold one of Swift concurrency's few cooperative threads (tests run
    /// in parallel on them; a blocked pool starves every async test in the process).
    public static func run(executable: String, arguments: [String], environment: [String: String]? = nil) async throws -> Result {
        try await onThread { try self.run(executable: executable, arguments: arguments, environment: environment) as Result }
    }

    /// Runs `executable` and waits for it; `environment` is the child's whole environment, nil
    /// for ``inheritedEnvironment``.
    public static func run(executable: String, arguments: [String], environment: [String: String]? = nil) throws -> Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-child-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outPath = directory.appendingPathComponent("out").path
        let errPath = directory.appendingPathComponent("err").path

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let environmentLines = (environment ?? Self.inheritedEnvironment).map { "\($0.key)=\($0.value)" }
        let envp = environmentLines.map { strdup($0) } + [nil]
        defer { envp.forEach { free($0) } }

        var pid: pid_t = 0
        let spawned = Self.spawn(&pid, executable, &actions, argv, envp)
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EINVAL) }
        var status: Int32 = 0
        var usage = rusage()
        #if os(Linux)
        var peakKiB = 0
        while true {
            if let sample = Self.highWaterMarkKiB(pid: pid) { peakKiB = max(peakKiB, sample) }
            let reaped = wait4(pid, &status, WNOHANG, &usage)
            if reaped == pid || (reaped < 0 && errno != EINTR) { break }
            usleep(10_000)
        }
        let peakResidentBytes = peakKiB * 1024
        #else
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        let peakResidentBytes = Int(usage.ru_maxrss)
        #endif
        let exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Result(
            status: exitStatus,
            outputBytes: Array((try? Data(contentsOf: URL(fileURLWithPath: outPath))) ?? Data()),
            standardError: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "",
            peakResidentBytes: peakResidentBytes
        )
    }

    /// `posix_spawn` with the signal state a shell gives a program: no signal blocked, and
    /// the default action for the signals a test stops its children with.
    ///
    /// Without it a child inherits the spawning thread's mask, and the threads tests run on
    /// (Swift concurrency's, Dispatch's) block SIGINT and SIGTERM. A daemon that does not reset
    /// its mask (PgBouncer 1.18) then never sees the signal meant to stop it and outlives the
    /// suite. Returns `posix_spawn`'s result.
    public static func spawn(
        _ pid: inout pid_t, _ executable: String, _ actions: inout posix_spawn_file_actions_t,
        _ argv: [UnsafeMutablePointer<CChar>?], _ envp: [UnsafeMutablePointer<CChar>?]
    ) -> Int32 {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        return posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
    }

    /// The `VmHWM` line of `/proc/PID/status` in KiB, or nil once the process is gone.
    static func highWaterMarkKiB(pid: pid_t) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(String(line.dropFirst("VmHWM:".count).filter(\.isNumber)))
        }
        return nil
    }
}

