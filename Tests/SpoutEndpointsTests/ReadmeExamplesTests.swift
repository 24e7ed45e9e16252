import Foundation
import SpoutTestSupport
import Testing

/// Runs every `curl` example of README.md against a freshly seeded `spout serve` (the Quick
/// start's embedded SQLite default, in a temporary directory) and compares the output, so the
/// README cannot drift from what Spout does.
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

/// `spout serve` in a child process on a new SQLite database in a temporary directory.
final class ServedSpout {
    let process = Process()
    let port: Int
    let directory: URL

    init(root: URL, extraArguments: [String] = []) throws {
        self.directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        self.process.executableURL = URL(fileURLWithPath: try ChildProcess.spoutExecutable())
        self.process.currentDirectoryURL = root
        self.process.arguments = [
            "serve", "--port", "0", "--database", "sqlite:" + self.directory.appendingPathComponent("spout.sqlite").path,
        ] + extraArguments
        var environment = ProcessInfo.processInfo.environment
        environment = environment.filter { !$0.key.hasPrefix("SPOUT_") }
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
            self.process.terminate()
            struct DidNotStart: Error, CustomStringConvertible { var description: String }
            throw DidNotStart(description: "spout serve did not start:\n\(log)")
        }
        self.port = port
        // Keep draining the log so the child never blocks on a full pipe.
        handle.readabilityHandler = { handle in _ = handle.availableData }
    }

    func stop() {
        if self.process.isRunning {
            self.process.terminate()
            self.process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: self.directory)
    }
}
