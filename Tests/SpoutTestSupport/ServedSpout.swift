import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `spout serve` in a child process, as a user would run it: on a new SQLite database in a
/// temporary directory, from a copy of the repository's `config/` and `sql/`, and — when the
/// tests run as root — as the unprivileged user `nobody` with no capabilities at all.
///
/// The last point is the reason this type exists: a server that only works with root's
/// privileges (a socket option that needs `CAP_NET_ADMIN`, a file it cannot write) passes every
/// test run as root and fails for every user. Dropping privileges goes through `setpriv`
/// (util-linux): real and effective ids `nobody`/`nogroup`, no supplementary groups, empty
/// inheritable and bounding capability sets, `no_new_privs`. The executable, the configuration
/// and the data directory are staged in a temporary directory `nobody` owns, so the checkout
/// itself may live where `nobody` cannot read (a CI clone under `/root`).
///
/// Not `Sendable`: one test owns it and calls ``stop()`` when done.
public final class ServedSpout {
    /// The port `spout serve` reported in its "listening on" line.
    public let port: Int
    /// Whether the server runs as `nobody` (the tests run as root) or as the current user.
    public let isUnprivileged: Bool
    /// The staging directory: `spout`, `config/`, `sql/` and `data/`.
    public let directory: URL
    private let process = Process()

    /// The user the server runs as when the tests run as root.
    public static let unprivilegedUser = "nobody"
    public static let unprivilegedGroup = "nogroup"

    /// Starts `spout serve --port 0 --database sqlite:<directory>/data/spout.sqlite` and waits
    /// for its "listening" line.
    ///
    /// - Parameters:
    ///   - root: the repository (its `config/` and `sql/` are copied).
    ///   - extraArguments: appended to the `serve` command line.
    ///   - environment: extra variables; the test process's `SPOUT_*` variables are never passed.
    ///   - extraFiles: files added to the staged copy before the server starts, by path relative
    ///     to the staging directory (`config/endpoints/x.yaml`, `sql/x/y.sql`) with their text;
    ///     intermediate directories are created, an existing file is replaced. A path must be
    ///     relative and stay inside the staging directory.
    /// - Throws: when a path of `extraFiles` is absolute or leaves the staging directory, when
    ///   a file cannot be written, or when the server exits or closes its log before listening
    ///   (the log is in the error).
    ///   - embeddedDefault: start without `--database`, in a directory where no user can make
    ///     `data/` (a file holds its name), with `TMPDIR` at the staging directory's `tmp/`:
    ///     the embedded default as someone else's checkout gives it.
    public init(
        root: URL, extraArguments: [String] = [], environment extra: [String: String] = [:],
        extraFiles: [String: String] = [:], embeddedDefault: Bool = false
    ) throws {
        let files = FileManager.default
        self.directory = files.temporaryDirectory.appendingPathComponent("spout-served-\(UUID().uuidString)")
        // With the embedded default the writable folder is the temporary one.
        let data = self.directory.appendingPathComponent(embeddedDefault ? "tmp" : "data")
        try files.createDirectory(at: data, withIntermediateDirectories: true)
        if embeddedDefault { try Data().write(to: self.directory.appendingPathComponent("data")) }
        let executable = self.directory.appendingPathComponent("spout")
        try Self.stage(try ChildProcess.spoutExecutable(), at: executable.path)
        for folder in ["config", "sql"] {
            try files.copyItem(at: root.appendingPathComponent(folder), to: self.directory.appendingPathComponent(folder))
        }
        do {
            try Self.write(extraFiles, into: self.directory)
        } catch {
            try? files.removeItem(at: self.directory)
            throw error
        }

        self.isUnprivileged = geteuid() == 0
        if self.isUnprivileged {
            // nobody must be able to reach the staging directory and write its data folder;
            // everything else stays root's and read-only to it.
            try files.setAttributes([.posixPermissions: 0o755], ofItemAtPath: self.directory.path)
            try Self.changeOwner(of: data.path, user: Self.unprivilegedUser, group: Self.unprivilegedGroup)
            self.process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            self.process.arguments = [
                "--reuid=\(Self.unprivilegedUser)", "--regid=\(Self.unprivilegedGroup)", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--", executable.path,
            ]
        } else {
            self.process.executableURL = executable
            self.process.arguments = []
        }
        self.process.arguments! += ["serve", "--port", "0"]
        if !embeddedDefault { self.process.arguments! += ["--database", "sqlite:" + data.appendingPathComponent("spout.sqlite").path] }
        self.process.arguments! += extraArguments
        self.process.currentDirectoryURL = self.directory
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SPOUT_") }
        environment["HOME"] = self.directory.path
        if embeddedDefault { environment["TMPDIR"] = data.path }
        environment.merge(extra) { _, new in new }
        self.process.environment = environment
        let errors = Pipe()
        self.process.standardError = errors
        self.process.standardOutput = FileHandle.nullDevice
        try self.process.run()

        // Read the log until the "listening on http://HOST:PORT" line.
        var log = ""
        var found: Int?
        let handle = errors.fileHandleForReading
        while found == nil {
            let data = handle.availableData
            if data.isEmpty { break }
            log += String(decoding: data, as: UTF8.self)
            if let range = log.range(of: "listening on http://127.0.0.1:") {
                let digits = log[range.upperBound...].prefix { $0.isNumber }
                if !digits.isEmpty, log[range.upperBound...].dropFirst(digits.count).first != nil { found = Int(digits) }
            }
        }
        guard let port = found else {
            if self.process.isRunning { self.process.terminate() }
            try? files.removeItem(at: self.directory)
            struct DidNotStart: Error, CustomStringConvertible { var description: String }
            throw DidNotStart(description: "spout serve did not start:\n\(log)")
        }
        self.port = port
        // Keep draining the log so the child never blocks on a full pipe.
        handle.readabilityHandler = { handle in _ = handle.availableData }
    }

    /// Copies the executable at `source` to `target` (mode 0755) through a descriptor opened
    /// close-on-exec. `FileManager.copyItem` writes through one that is not: a child another
    /// test spawns meanwhile inherits it and keeps the copy open for writing, and executing the
    /// copy then fails with ETXTBSY ("Text file busy") for as long as that child lives.
    static func stage(_ source: String, at target: String) throws {
        struct StagingFailed: Error, CustomStringConvertible { var description: String }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: source))
        let descriptor = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
        guard descriptor >= 0 else { throw StagingFailed(description: "cannot create \(target): errno \(errno)") }
        defer { close(descriptor) }
        try bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                guard written > 0 else { throw StagingFailed(description: "cannot write \(target): errno \(errno)") }
                offset += written
            }
        }
    }

    /// The uid the server process runs as, read from `/proc/PID/status` (`Uid:` real, effective…).
    public func runningUserIDs() throws -> [UInt32] {
        let status = try String(contentsOfFile: "/proc/\(self.process.processIdentifier)/status", encoding: .utf8)
        let line = status.split(separator: "\n").first { $0.hasPrefix("Uid:") } ?? ""
        return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().compactMap { UInt32($0) }
    }

    /// The process's effective capability set (`CapEff:` of `/proc/PID/status`), as hex text.
    public func effectiveCapabilities() throws -> String {
        let status = try String(contentsOfFile: "/proc/\(self.process.processIdentifier)/status", encoding: .utf8)
        let line = status.split(separator: "\n").first { $0.hasPrefix("CapEff:") } ?? ""
        return line.split(separator: "\t").last.map(String.init) ?? ""
    }

    /// Stops the server (SIGTERM, then waits) and removes the staging directory.
    public func stop() {
        if self.process.isRunning {
            self.process.terminate()
            self.process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: self.directory)
    }

    /// Writes `contents` (relative path → text) under `directory`, creating folders as needed.
    private static func write(_ contents: [String: String], into directory: URL) throws {
        struct OutsideStaging: Error, CustomStringConvertible { var description: String }
        for (path, text) in contents.sorted(by: { $0.key < $1.key }) {
            let components = path.split(separator: "/")
            guard !path.hasPrefix("/"), !components.isEmpty, !components.contains(".."), !components.contains(".") else {
                throw OutsideStaging(description: "extra file '\(path)' must be a relative path inside the staging directory")
            }
            let target = directory.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: target)
        }
    }

    private static func changeOwner(of path: String, user: String, group: String) throws {
        guard let account = getpwnam(user), let groupEntry = getgrnam(group) else {
            struct NoSuchUser: Error, CustomStringConvertible { var description: String }
            throw NoSuchUser(description: "user \(user) or group \(group) does not exist")
        }
        guard chown(path, account.pointee.pw_uid, groupEntry.pointee.gr_gid) == 0 else {
            struct ChownFailed: Error, CustomStringConvertible { var description: String }
            throw ChownFailed(description: "chown \(path): \(String(cString: strerror(errno)))")
        }
    }
}
