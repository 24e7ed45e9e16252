import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A program that puts itself in the background and names its process in a pid file
/// (PgBouncer `-d`, nginx), the way a distribution's service runs it. It is started with
/// ``ChildProcess/run(executable:arguments:environment:)`` (the foreground part exits once the
/// daemon has forked) and stopped by signals to the process its pid file names: one launcher
/// for every child, no second owner of child exits.
public enum Daemon {
    /// The process id in the pid file at `path` (nil while the file is missing or empty).
    public static func pid(fromFile path: String) -> pid_t? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Whether `pid` is a process that has not exited. A zombie has: a daemon is not the test
    /// process's child, so its exit is reaped by whoever adopted it, and until then `kill(pid,
    /// 0)` still succeeds.
    public static func isRunning(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0 else { return false }
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        return !status.contains("State:\tZ")
    }

    /// Sends each of `signals` in turn while `pid` runs, waiting up to `grace` after each for it
    /// to exit (for example `[SIGTERM, SIGKILL]`). Blocks the calling thread.
    public static func stop(_ pid: pid_t, signals: [Int32], grace: Duration = .seconds(3)) {
        for signal in signals where self.isRunning(pid) {
            kill(pid, signal)
            let deadline = ContinuousClock.now + grace
            while self.isRunning(pid) && ContinuousClock.now < deadline { usleep(20_000) }
        }
    }
}
