import Foundation
import SpoutTestSupport
import Testing

/// Prometheus's own linter, `promtool check metrics` (Debian's `prometheus` package, installed
/// by scripts/test).
///
/// Without it a test that needs it is skipped, except under `CI=true`, where it fails.
enum Promtool {
    /// The executable on `PATH` (or in `/usr/bin`), if any.
    static var path: String? {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) + ["/usr/bin"]
        return directories.map { $0 + "/promtool" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static var isAvailable: Bool { self.path != nil }

    static var isRequired: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    static let missing: Comment = "promtool is missing: apt-get install prometheus (scripts/test installs it)"

    /// What `promtool check metrics` reports for `exposition`, given on its standard input:
    /// its exit status and everything it printed (standard output and error together). An
    /// exposition without findings gives status 0 and no output.
    static func checkMetrics(_ exposition: [UInt8]) async throws -> (status: Int32, output: String) {
        let promtool = try #require(self.path, self.missing)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("spout-promtool-\(UUID().uuidString).txt").path
        try Data(exposition).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let result = try await ChildProcess.run(
            executable: "/bin/sh", arguments: ["-c", #"exec "$0" check metrics < "$1""#, promtool, file])
        return (result.status, result.standardOutput + result.standardError)
    }
}
