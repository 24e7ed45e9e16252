import Foundation
import SpoutTestSupport
import Testing

/// Runs every `curl` example of README.md against a freshly seeded `spout serve` (the Quick
/// start's embedded SQLite default, in a temporary directory) and compares the output, so the
/// README cannot drift from what Spout does. When the tests run as root, the server runs as
/// `nobody` with no capabilities (``ServedSpout``): the examples must work for a user, not
/// only for root.
@Suite struct ReadmeExamplesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    struct Example {
        var command: String
        var expected: String
    }

    /// The `$ curl` commands of the README's console blocks, each with the lines after it.
    static func examples() throws -> [Example] {
        let readme = try String(contentsOf: self.root.appendingPathComponent("README.md"), encoding: .utf8)
        var examples: [Example] = []
        var inConsole = false
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("```") {
                inConsole = line == "```console"
                continue
            }
            guard inConsole else { continue }
            if line.hasPrefix("$ curl ") {
                examples.append(Example(command: String(line.dropFirst(2)), expected: ""))
            } else if !examples.isEmpty {
                examples[examples.count - 1].expected += (examples[examples.count - 1].expected.isEmpty ? "" : "\n") + line
            }
        }
        return examples
    }

    @Test func everyCurlExampleAnswersAsDocumented() async throws {
        // Blocking process work, on a thread of its own rather than a cooperative one.
        try await OwnThread.run { try Self.runExamples() }
    }

    static func runExamples() throws {
        let examples = try self.examples()
        #expect(examples.count >= 10, "the README's examples were not found")
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/curl") else {
            Issue.record("curl is needed to run the README's examples (scripts/test installs it)")
            return
        }
        let server = try ServedSpout(root: self.root)
        defer { server.stop() }
        if server.isUnprivileged {
            #expect(try server.runningUserIDs().allSatisfy { $0 != 0 }, "the server must not run as root")
            #expect(try server.effectiveCapabilities() == "0000000000000000")
        }
        for example in examples {
            let command = example.command.replacingOccurrences(of: "localhost:8080", with: "127.0.0.1:\(server.port)")
            let output = try self.shell(command)
            #expect(output == example.expected, "\(example.command)")
        }
    }

    static func shell(_ command: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", command]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        // CSV lines end in CRLF; the README shows them as lines.
        var text = String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
        while text.hasSuffix("\n") { text.removeLast() }
        return text
    }
}
