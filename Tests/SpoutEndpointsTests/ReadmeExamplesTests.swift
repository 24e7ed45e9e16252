import Foundation
import SpoutCore
import SpoutData
import SpoutDrivers
import SpoutEndpoints
import SpoutTestDatabases
import SpoutTestSupport
import Testing

/// Runs the examples of README.md and docs/*.md against a freshly seeded `spout serve` and
/// compares their output, so the documentation cannot drift from what Spout does.
///
/// The convention (documented in docs/endpoints.md, "Examples in the documentation are
/// tested"):
/// - `<!-- example: PATH -->` on the line right before a ```` ```yaml ```` or ```` ```sql ````
///   fence makes the block the file PATH of the served configuration: `config/endpoints/*.yaml`
///   or `sql/**/*.sql`, a file the repository does not ship;
/// - every ```` ```console ```` block is run: each `$ curl …` line is a command, the lines up
///   to the next command or the end of the block are its expected output;
/// - every other block is prose and not run.
///
/// All the marked files are staged together (``ServedSpout``'s `extraFiles`), one server is
/// started per database and the commands run in document order (README.md first, then
/// docs/*.md by name): on SQLite, the quick start's seeded default; on PostgreSQL, when
/// available, a fresh database seeded with the same generated data. A marker that cannot be
/// used, a server that does not start with the marked files, and an output that differs
/// fail the test. When the tests run as root, the server runs as `nobody` with no
/// capabilities (``ServedSpout``): the examples must work for a user, not only for root.
@Suite struct ReadmeExamplesTests {
    static var root: URL { TestFixtures.repositoryRoot }

    /// A line of a document, for messages.
    struct Location: CustomStringConvertible, Equatable {
        var document: String
        var line: Int

        var description: String { "\(self.document):\(self.line)" }
    }

    /// A block marked `<!-- example: PATH -->`: the file it becomes.
    struct ExampleFile: Equatable {
        var path: String
        var contents: String
        var location: Location
    }

    /// A `$ curl` line of a console block and the output shown after it.
    struct Example: Equatable {
        var command: String
        var expected: String
        var location: Location
    }

    /// The examples of one or more documents, in document order.
    struct Examples: Equatable {
        var files: [ExampleFile] = []
        var commands: [Example] = []
    }

    /// A marker or console block the test cannot use: the documentation must be fixed.
    struct MalformedExample: Error, CustomStringConvertible {
        var location: Location
        var problem: String

        var description: String { "\(self.location): \(self.problem)" }
    }

    /// The documents searched: README.md, then docs/*.md by name.
    static func documents() throws -> [String] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: self.root.appendingPathComponent("docs").path)
        return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
    }

    /// The examples of every document; a file marked twice, or marked over a file the
    /// repository ships, is an error.
    static func allExamples() throws -> Examples {
        var all = Examples()
        for document in try self.documents() {
            let text = try String(contentsOf: self.root.appendingPathComponent(document), encoding: .utf8)
            let found = try self.examples(in: text, document: document)
            for file in found.files {
                if let first = all.files.first(where: { $0.path == file.path }) {
                    throw MalformedExample(location: file.location, problem: "\(file.path) is already the example at \(first.location)")
                }
                if FileManager.default.fileExists(atPath: self.root.appendingPathComponent(file.path).path) {
                    throw MalformedExample(
                        location: file.location, problem: "\(file.path) is a shipped file; an example must add a file of its own")
                }
            }
            all.files += found.files
            all.commands += found.commands
        }
        return all
    }

    /// The marked files and the console commands of one document (see the type's comment).
    ///
    /// - Throws: ``MalformedExample`` for a marker that is not right before a `yaml` or `sql`
    ///   fence of the kind its path names, a path outside `config/endpoints/` and `sql/`, a
    ///   console block line starting with `$ ` that is not a curl command, output before the
    ///   first command, or a fence that is never closed.
    static func examples(in text: String, document: String) throws -> Examples {
        var examples = Examples()
        var marker: (path: String, location: Location)?
        var block: (language: String, marker: (path: String, location: Location)?, start: Location, lines: [String])?
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).enumerated() {
            let location = Location(document: document, line: index + 1)
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if let open = block {
                if trimmed == "```" {
                    block = nil
                    if let fileMarker = open.marker {
                        let contents = open.lines.map { $0 + "\n" }.joined()
                        examples.files.append(ExampleFile(path: fileMarker.path, contents: contents, location: fileMarker.location))
                    } else if open.language == "console" {
                        examples.commands += try self.commands(in: open.lines, start: open.start)
                    }
                } else {
                    block?.lines.append(line)
                }
                continue
            }
            if let pending = marker {
                marker = nil
                guard trimmed.hasPrefix("```") else {
                    throw MalformedExample(location: pending.location, problem: "an example marker must be right before a fenced block")
                }
                let language = String(trimmed.dropFirst(3))
                let wanted = pending.path.hasSuffix(".sql") ? "sql" : "yaml"
                guard language == wanted else {
                    throw MalformedExample(
                        location: pending.location,
                        problem: "the example \(pending.path) must be a ```\(wanted) block, not ```\(language)"
                            + (language == "console" ? " (console blocks are always run, without a marker)" : ""))
                }
                block = (language, pending, location, [])
                continue
            }
            if trimmed.hasPrefix("<!-- example") {
                marker = (try self.markedPath(trimmed, at: location), location)
            } else if trimmed.hasPrefix("```") {
                block = (String(trimmed.dropFirst(3)), nil, location, [])
            }
        }
        if let open = block { throw MalformedExample(location: open.start, problem: "this fenced block is never closed") }
        if let pending = marker {
            throw MalformedExample(location: pending.location, problem: "an example marker must be right before a fenced block")
        }
        return examples
    }

    /// The path of `<!-- example: PATH -->`, checked to be an endpoint file or an SQL file.
    static func markedPath(_ line: String, at location: Location) throws -> String {
        guard line.hasPrefix("<!-- example:"), line.hasSuffix("-->") else {
            throw MalformedExample(location: location, problem: "an example marker reads <!-- example: PATH -->")
        }
        let path = line.dropFirst("<!-- example:".count).dropLast("-->".count).trimmingCharacters(in: .whitespaces)
        let components = path.split(separator: "/", omittingEmptySubsequences: false)
        let isEndpointFile = components.count == 3 && path.hasPrefix("config/endpoints/") && path.hasSuffix(".yaml")
        let isSQLFile = components.count >= 2 && path.hasPrefix("sql/") && path.hasSuffix(".sql")
        guard isEndpointFile || isSQLFile, !components.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
            throw MalformedExample(
                location: location, problem: "an example file is config/endpoints/NAME.yaml or sql/PATH.sql, not '\(path)'")
        }
        return path
    }

    /// The commands of a console block's lines (the line after the fence is `start.line + 1`).
    static func commands(in lines: [String], start: Location) throws -> [Example] {
        var commands: [Example] = []
        for (offset, line) in lines.enumerated() {
            let location = Location(document: start.document, line: start.line + 1 + offset)
            if line.hasPrefix("$ ") {
                guard line.hasPrefix("$ curl ") else {
                    throw MalformedExample(
                        location: location, problem: "console blocks are run, and only curl commands can be; show this one in a sh block")
                }
                commands.append(Example(command: String(line.dropFirst(2)), expected: "", location: location))
            } else if let last = commands.indices.last {
                commands[last].expected += (commands[last].expected.isEmpty ? "" : "\n") + line
            } else {
                throw MalformedExample(location: location, problem: "a console block starts with a $ curl command")
            }
        }
        return commands
    }

    /// SQLite: the embedded default as a user starts it. PostgreSQL: the same data (the same
    /// generator, size and seed) in a database of its own, served to an ordinary login role.
    @Test("every example answers as documented", arguments: SQLDialect.allCases)
    func everyExampleAnswersAsDocumented(_ dialect: SQLDialect) async throws {
        if dialect == .postgres && !TestDatabases.postgresEnabled { return }
        guard let examples = try Self.examplesToRun() else { return }
        let served = dialect == .sqlite
            ? try await Self.serve(examples, extraArguments: []) : try await Self.servedOnPostgres(examples)
        Self.compare(served, with: examples)
    }

    /// Serves `examples` on a new PostgreSQL database seeded as the SQLite default is.
    private static func servedOnPostgres(_ examples: Examples) async throws -> Served {
        let database = try TestDatabases.makePostgresDatabase(prefix: "spout_docs")
        defer { database.drop() }
        let (url, role) = try await onThread {
            // The data the SQLite default seeds itself with: the same generator, size and seed.
            let shipped = try SpoutConfiguration.load(file: Repository.configFile, environment: [:])
            let connection = try Drivers.driver(for: database.url).connect(readOnly: false, statistics: QueryStatistics())
            defer { connection.close() }
            try SQLiteSeeder.seedIfMissing(
                connection: connection, sqlDirectory: Repository.sqlDirectory, employees: shipped.database.seed.employees)
            // Spout logs in as an ordinary role, as it should: a superuser would bypass the
            // pets' row-level security.
            return try IdentityDatabase.createLoginRole(on: connection, url: database.url)
        }
        defer { IdentityDatabase.dropRoles([role], database: database) }
        // ServedSpout passes its SQLite URL first; the last `--database` wins.
        return try await Self.serve(examples, extraArguments: ["--database", url])
    }

    /// Every example, checked to include the README's; nil (with an issue) without curl.
    static func examplesToRun() throws -> Examples? {
        let examples = try self.allExamples()
        #expect(examples.commands.count >= 10, "the documentation's examples were not found")
        #expect(examples.files.contains { $0.path == "config/endpoints/managers.yaml" }, "README's own endpoint is not marked")
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/curl") else {
            Issue.record("curl is needed to run the documentation's examples (scripts/test installs it)")
            return nil
        }
        return examples
    }

    /// What ``serve(_:extraArguments:)`` saw: the output of each command, and the server's user
    /// ids and capabilities when it ran unprivileged.
    struct Served {
        var outputs: [String]
        var unprivileged: (userIDs: [UInt32], capabilities: String)?
    }

    /// Serves the shipped configuration with every marked file added and runs every command
    /// (on a thread of its own: they block); the comparison is left to ``compare(_:with:)``.
    static func serve(_ examples: Examples, extraArguments: [String]) async throws -> Served {
        let files = Dictionary(uniqueKeysWithValues: examples.files.map { ($0.path, $0.contents) })
        let server = try await ServedSpout.start(
            root: self.root, extraArguments: extraArguments, environment: ["SPOUT_JWT_SECRET": Self.tokenSecret], extraFiles: files)
        do {
            var served = Served(outputs: [])
            if server.isUnprivileged {
                served.unprivileged = (try server.runningUserIDs(), try server.effectiveCapabilities())
            }
            let port = server.port
            served.outputs = try await onThread {
                try examples.commands.map { example in
                    try self.shell(
                        example.command
                            .replacingOccurrences(of: "localhost:8080", with: "127.0.0.1:\(port)")
                            .replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:\(port)"))
                }
            }
            await server.stop()
            return served
        } catch {
            await server.stop()
            throw error
        }
    }

    static func compare(_ served: Served, with examples: Examples) {
        if let unprivileged = served.unprivileged {
            #expect(unprivileged.userIDs.allSatisfy { $0 != 0 }, "the server must not run as root")
            #expect(unprivileged.capabilities == "0000000000000000")
        }
        for (example, output) in zip(examples.commands, served.outputs) {
            #expect(output == example.expected, "\(example.location): \(example.command)")
        }
    }

    /// The token secret of the served examples: commands make tokens with `spout token`
    /// (the built executable is on their `PATH`) signed with it.
    static let tokenSecret = "readme-examples-secret-0123456789abcdef"

    static func shell(_ command: String) throws -> String {
        var environment = ChildProcess.inheritedEnvironment
        environment["SPOUT_JWT_SECRET"] = Self.tokenSecret
        let executables = (try ChildProcess.spoutExecutable() as NSString).deletingLastPathComponent
        environment["PATH"] = executables + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        let result = try ChildProcess.run(executable: "/bin/bash", arguments: ["-c", command], environment: environment) as ChildProcess.Result
        // CSV lines end in CRLF; the documents show them as lines.
        var text = result.standardOutput.replacingOccurrences(of: "\r\n", with: "\n")
        while text.hasSuffix("\n") { text.removeLast() }
        return text
    }

    // MARK: The convention itself

    @Test func markedBlocksBecomeFilesAndConsoleBlocksCommands() throws {
        let text = """
            Prose.

            <!-- example: config/endpoints/things.yaml -->
            ```yaml
            paths: {}
            ```

            <!-- example: sql/things/all.sql -->
            ```sql
            SELECT 1
            ```

            ```yaml
            unmarked: prose
            ```

            ```console
            $ curl -s 'http://localhost:8080/things'
            [1]
            [2]
            $ curl -s 'http://localhost:8080/other'
            ```
            """
        let examples = try Self.examples(in: text, document: "x.md")
        #expect(examples.files == [
            ExampleFile(path: "config/endpoints/things.yaml", contents: "paths: {}\n", location: Location(document: "x.md", line: 3)),
            ExampleFile(path: "sql/things/all.sql", contents: "SELECT 1\n", location: Location(document: "x.md", line: 8)),
        ])
        #expect(examples.commands == [
            Example(command: "curl -s 'http://localhost:8080/things'", expected: "[1]\n[2]", location: Location(document: "x.md", line: 18)),
            Example(command: "curl -s 'http://localhost:8080/other'", expected: "", location: Location(document: "x.md", line: 21)),
        ])
    }

    @Test(
        "a marker or console block the test cannot use is an error at its line",
        arguments: [
            ("<!-- example: config/endpoints/a.yaml -->\n\n```yaml\nx: 1\n```\n", 1, "right before a fenced block"),
            ("<!-- example: config/endpoints/a.yaml -->\n```sql\nSELECT 1\n```\n", 1, "must be a ```yaml block, not ```sql"),
            ("<!-- example: sql/a.sql -->\n```console\n$ curl x\n```\n", 1, "console blocks are always run"),
            ("<!-- example: config/spout.yaml -->\n```yaml\nx: 1\n```\n", 1, "not 'config/spout.yaml'"),
            ("<!-- example: sql/../x.sql -->\n```sql\nSELECT 1\n```\n", 1, "not 'sql/../x.sql'"),
            ("<!-- example config/endpoints/a.yaml -->\n```yaml\nx: 1\n```\n", 1, "reads <!-- example: PATH -->"),
            ("text\n<!-- example: config/endpoints/a.yaml -->\n", 2, "right before a fenced block"),
            ("```console\n$ swift run spout\n```\n", 2, "only curl commands"),
            ("```console\noutput\n$ curl x\n```\n", 2, "starts with a $ curl command"),
            ("```yaml\nx: 1\n", 1, "never closed"),
        ])
    func malformed(text: String, line: Int, problem: String) throws {
        let error = #expect(throws: MalformedExample.self) { try Self.examples(in: text, document: "x.md") }
        #expect(error?.location.line == line)
        #expect(error?.problem.contains(problem) == true, "\(error?.problem ?? "")")
    }

    @Test func everyDocumentsExamplesAreUsable() throws {
        let examples = try Self.allExamples()
        #expect(!examples.files.isEmpty)
        #expect(Set(examples.files.map(\.location.document)).contains("README.md"))
    }
}
