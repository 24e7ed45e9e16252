import Foundation
import SpoutTestSupport
import Testing

/// The README's first command, `scripts/serve`, on a machine that lacks the C libraries' Debian
/// packages, as a user who cannot install them: one line naming them, status 69, nothing
/// built. The machine is this one seen through a mount namespace in which dpkg's database
/// lacks two of the packages (making the namespace needs root, as CI runs).
@Suite("The README's first command on a fresh machine")
struct FirstCommandTests {
    @Test("as a user, scripts/serve names the missing packages in one line and builds nothing", .enabled(if: geteuid() == 0))
    func namesMissingPackages() async throws {
        let folder = try TemporaryDirectory()
        let root = URL(fileURLWithPath: folder.path)
        let files = FileManager.default
        try files.createDirectory(at: root.appendingPathComponent("scripts"), withIntermediateDirectories: true)
        for script in ["serve", "install-packages"] {
            let target = root.appendingPathComponent("scripts/" + script).path
            try files.copyItem(atPath: TestFixtures.repositoryRoot.path + "/scripts/" + script, toPath: target)
            try files.setAttributes([.posixPermissions: 0o755], ofItemAtPath: target)
        }
        try files.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        try files.setAttributes([.posixPermissions: 0o755], ofItemAtPath: root.appendingPathComponent("scripts").path)

        // dpkg's database without libsqlite3-dev and libisal-dev.
        let status = try String(contentsOfFile: "/var/lib/dpkg/status", encoding: .utf8)
        let stanzas = status.components(separatedBy: "\n\n").filter { stanza in
            !["libsqlite3-dev", "libisal-dev"].contains { stanza.hasPrefix("Package: \($0)\n") }
        }
        try #require(stanzas.count < status.components(separatedBy: "\n\n").count, "this machine has the packages to hide")
        let reduced = root.appendingPathComponent("dpkg-status").path
        try stanzas.joined(separator: "\n\n").write(toFile: reduced, atomically: true, encoding: .utf8)
        try files.setAttributes([.posixPermissions: 0o644], ofItemAtPath: reduced)

        let user = ServedSpout.unprivilegedUser
        let group = ServedSpout.unprivilegedGroup
        let run = try await ChildProcess.run(
            executable: "/usr/bin/unshare",
            arguments: [
                "--mount", "--", "/bin/sh", "-c",
                "mount --bind \"$1\" /var/lib/dpkg/status && exec setpriv --reuid=\(user) --regid=\(group) --clear-groups \"$2/scripts/serve\"",
                "sh", reduced, folder.path,
            ],
            environment: ["PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": folder.path])
        #expect(run.status == 69, "\(run.status): \(run.standardError)")
        #expect(run.standardOutput.isEmpty, "\(run.standardOutput)")
        #expect(
            run.standardError
                == "scripts/serve: Spout builds against Debian packages this machine lacks; install them first: sudo apt-get install libsqlite3-dev libisal-dev\n",
            "\(run.standardError)")
        #expect(!files.fileExists(atPath: root.appendingPathComponent(".build").path), "nothing is built")
    }
}
