import Foundation
import SpoutTestSupport

/// A Python module a test runs (schemathesis, prometheus_client), installed by scripts/test
/// with pip.
///
/// Without it the test is skipped, except under `CI=true`, where it fails, unless scripts/test
/// reported that pip could not install its package (`SPOUT_UNAVAILABLE_TOOLS`; no PyPI access).
struct PythonModule: Sendable {
    /// What `import` takes (`prometheus_client.parser`).
    var module: String
    /// What pip installs (`prometheus-client`).
    var package: String

    var isAvailable: Bool {
        (try? ChildProcess.run(executable: "/usr/bin/env", arguments: ["python3", "-c", "import \(self.module)"]).status) == 0
    }

    var isRequired: Bool {
        let environment = ProcessInfo.processInfo.environment
        let unavailable = (environment["SPOUT_UNAVAILABLE_TOOLS"] ?? "").split(separator: " ")
        return environment["CI"] == "true" && !unavailable.contains(Substring(self.package))
    }
}
