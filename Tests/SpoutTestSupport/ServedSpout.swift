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
/// Started through ``ServerProcess`` (the one way tests run the server as a process), which it
/// exposes as ``process``.
public final class ServedSpout: Sendable {
    /// The server process (port, log, memory, signals).
    public let process: ServerProcess
    /// Whether the server runs as `nobody` (the tests run as root) or as the current user.
    public let isUnprivileged: Bool
    /// The staging directory: `spout`, `config/`, `sql/` and `data/`.
    public let directory: URL

    /// The port `spout serve` reported in its "listening on" line.
    public var port: Int { self.process.port }

    /// The user the server runs as when the tests run as root.
    public static let unprivilegedUser = "nobody"
    public static let unprivilegedGroup = "nogroup"

    private init(process: ServerProcess, isUnprivileged: Bool, directory: URL) {
        self.process = process
        self.isUnprivileged = isUnprivileged
        self.directory = directory
    }

    /// Stages a checkout and starts `spout serve --port 0 --database
    /// sqlite:<directory>/data/spout.sqlite` in it; returns once it listens.
    ///
    /// - Parameters:
    ///   - root: the repository (its `config/` and `sql/` are copied).
    ///   - extraArguments: appended to the `serve` command line.
    ///   - environment: extra variables; the test process's `SPOUT_*` variables are never passed.
    ///   - extraFiles: files added to the staged copy before the server starts, by path relative
    ///     to the staging directory (`config/endpoints/x.yaml`, `sql/x/y.sql`) with their text;
    ///     intermediate directories are created, an existing file is replaced. A path must be
    ///     relative and stay inside the staging directory.
    ///   - embeddedDefault: start without `--database`, in a directory where no user can make
    ///     `data/` (a file holds its name), with `TMPDIR` at the staging directory's `tmp/`:
    ///     the embedded default as someone else's checkout gives it.
    /// - Throws: when a path of `extraFiles` is absolute or leaves the staging directory, when
    ///   a file cannot be written, or when the server exits before listening (its log is in the
    ///   error).
    public static func start(
        root: URL, extraArguments: [String] = [], environment extra: [String: String] = [:],
        extraFiles: [String: String] = [:], embeddedDefault: Bool = false
    ) async throws -> ServedSpout {
        let files = FileManager.default
        let directory = files.temporaryDirectory.appendingPathComponent("spout-served-\(UUID().uuidString)")
        do {
            // With the embedded default the writable folder is the temporary one.
            let data = directory.appendingPathComponent(embeddedDefault ? "tmp" : "data")
            try files.createDirectory(at: data, withIntermediateDirectories: true)
            if embeddedDefault { try Data().write(to: directory.appendingPathComponent("data")) }
            let executable = directory.appendingPathComponent("spout")
            try Self.stage(try ChildProcess.spoutExecutable(), at: executable.path)
            for folder in ["config", "sql"] {
                try files.copyItem(at: root.appendingPathComponent(folder), to: directory.appendingPathComponent(folder))
            }
            try Self.write(extraFiles, into: directory)

            let isUnprivileged = geteuid() == 0
            var prefix: [String] = []
            if isUnprivileged {
                // nobody must be able to reach the staging directory and write its data folder;
                // everything else stays root's and read-only to it.
                try files.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
                try Self.changeOwner(of: data.path, user: Self.unprivilegedUser, group: Self.unprivilegedGroup)
                prefix = [
                    "/usr/bin/setpriv", "--reuid=\(Self.unprivilegedUser)", "--regid=\(Self.unprivilegedGroup)", "--clear-groups",
                    "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--",
                ]
            }
            var arguments: [String] = []
            if !embeddedDefault { arguments += ["--database", "sqlite:" + data.appendingPathComponent("spout.sqlite").path] }
            var environment = ["HOME": directory.path]
            if embeddedDefault { environment["TMPDIR"] = data.path }
            environment.merge(extra) { _, new in new }
            let process = try await ServerProcess.start(
                arguments: arguments + extraArguments, environment: environment, executable: executable.path, prefix: prefix,
                workingDirectory: directory.path)
            return ServedSpout(process: process, isUnprivileged: isUnprivileged, directory: directory)
        } catch {
            try? files.removeItem(at: directory)
            throw error
        }
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
        let status = try String(contentsOfFile: "/proc/\(self.process.pid)/status", encoding: .utf8)
        let line = status.split(separator: "\n").first { $0.hasPrefix("Uid:") } ?? ""
        return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().compactMap { UInt32($0) }
    }

    /// The process's effective capability set (`CapEff:` of `/proc/PID/status`), as hex text.
    public func effectiveCapabilities() throws -> String {
        let status = try String(contentsOfFile: "/proc/\(self.process.pid)/status", encoding: .utf8)
        let line = status.split(separator: "\n").first { $0.hasPrefix("CapEff:") } ?? ""
        return line.split(separator: "\t").last.map(String.init) ?? ""
    }

    /// Stops the server (``ServerProcess/stop()``) and removes the staging directory.
    public func stop() async {
        await self.process.stop()
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
