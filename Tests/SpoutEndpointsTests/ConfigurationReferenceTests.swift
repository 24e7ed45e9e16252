import Foundation
@testable import SpoutEndpoints
import Testing

/// Checks the configuration reference against the parser's table of keys
/// (`SpoutConfiguration.settings`): docs/configuration.md, the README's table and the shipped
/// config/spout.yaml. A key added to the code without documentation, a documented key the
/// parser does not know, and a wrong variable or default all fail here.
@Suite struct ConfigurationReferenceTests {
    /// A row of a `| key | environment variable | default | …` table.
    struct Row {
        var key: String
        var variable: String
        var defaultValue: String
        var line: Int
    }

    /// Variables the executable reads itself, outside the settings table.
    static let executableVariables = ["SPOUT_CONFIG", "SPOUT_LOG_LEVEL", "SPOUT_LOG_FORMAT"]
    /// Variables a setting names (the default of `identity.secretFromEnvironment`).
    static let namedVariables = [SpoutConfiguration.Identity().secretFromEnvironment]

    static func read(_ document: String) throws -> String {
        try String(contentsOf: Repository.root.appendingPathComponent(document), encoding: .utf8)
    }

    /// The rows of every table of `text` whose header starts with `key`, `environment
    /// variable` and `default`. Each cell's first code span is its value, so a default may
    /// carry a remark after it (`` `[]` (CORS off) ``).
    static func rows(in text: String) -> [Row] {
        var rows: [Row] = []
        var inTable = false
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            guard line.hasPrefix("|") else {
                inTable = false
                continue
            }
            let cells = self.cells(of: String(line))
            if cells.count >= 3 && cells[0] == "key" && cells[1] == "environment variable" && cells[2] == "default" {
                inTable = true
                continue
            }
            guard inTable, cells.count >= 3, !cells[0].hasPrefix("---") else { continue }
            rows.append(
                Row(
                    key: self.firstCodeSpan(cells[0]) ?? cells[0], variable: self.firstCodeSpan(cells[1]) ?? cells[1],
                    defaultValue: self.firstCodeSpan(cells[2]) ?? cells[2], line: index + 1))
        }
        return rows
    }

    /// The cells of a table line, split at `|` but not at `\|`, trimmed.
    static func cells(of line: String) -> [String] {
        var cells: [String] = []
        var current = ""
        var previous: Character?
        for character in line.dropFirst() {
            if character == "|" && previous != "\\" {
                cells.append(current.trimmingCharacters(in: .whitespaces))
                current = ""
            } else {
                current.append(character)
            }
            previous = character
        }
        return cells
    }

    static func firstCodeSpan(_ text: String) -> String? {
        guard let open = text.firstIndex(of: "`") else { return nil }
        let rest = text[text.index(after: open)...]
        guard let close = rest.firstIndex(of: "`") else { return nil }
        return String(rest[..<close])
    }

    /// The default of `setting` as the documentation writes it: scalars as text, lists as
    /// `[a, b]`.
    static func defaultText(of setting: SpoutConfiguration.Setting) -> String {
        let defaults = SpoutConfiguration()
        switch setting.kind {
        case .string(let keyPath), .optionalString(let keyPath): return defaults[keyPath: keyPath]
        case .integer(let keyPath, _): return String(defaults[keyPath: keyPath])
        case .boolean(let keyPath): return String(defaults[keyPath: keyPath])
        case .dateFormat: return defaults.dateFormat.rawValue
        case .list: return "[" + defaults.endpoints.joined(separator: ", ") + "]"
        case .strings(let keyPath, _): return "[" + defaults[keyPath: keyPath].joined(separator: ", ") + "]"
        case .apiKeys: return "[]"
        }
    }

    /// Compares `rows` with the parser's keys: every row must be a known key with its variable
    /// and default; with `complete`, every key must have exactly one row.
    static func check(_ rows: [Row], of document: String, complete: Bool) {
        let settings = SpoutConfiguration.settings
        for row in rows {
            guard let setting = settings.first(where: { $0.path == row.key }) else {
                Issue.record("\(document):\(row.line): '\(row.key)' is not a key the configuration parser knows")
                continue
            }
            #expect(row.variable == setting.environmentVariable, "\(document):\(row.line): the variable of \(row.key)")
            #expect(row.defaultValue == self.defaultText(of: setting), "\(document):\(row.line): the default of \(row.key)")
        }
        guard complete else { return }
        for setting in settings {
            let count = rows.count(where: { $0.key == setting.path })
            #expect(count == 1, "\(document) has \(count) rows for \(setting.path) (\(setting.environmentVariable)); it needs one")
        }
    }

    @Test func configurationReferenceHasEveryKeyWithItsVariableAndDefault() throws {
        let rows = Self.rows(in: try Self.read("docs/configuration.md"))
        #expect(rows.count == SpoutConfiguration.settings.count)
        Self.check(rows, of: "docs/configuration.md", complete: true)
    }

    @Test func readmeTableAgreesWithTheParser() throws {
        let rows = Self.rows(in: try Self.read("README.md"))
        #expect(rows.count >= 5, "the README's configuration table was not found")
        Self.check(rows, of: "README.md", complete: false)
    }

    @Test func shippedFileHoldsEveryKeyWithItsDefault() throws {
        let text = try Self.read("config/spout.yaml")
        let root = try #require(try YAMLValue.parse(text, file: "config/spout.yaml"))
        for setting in SpoutConfiguration.settings {
            var value: YAMLValue? = root
            for name in setting.path.split(separator: ".") {
                value = try value?.mapping("'\(setting.path)'")[String(name)]
            }
            guard let value else {
                Issue.record("config/spout.yaml has no \(setting.path); it shows every key with its default")
                continue
            }
            let shown = try value.scalarText ?? "[" + value.sequence("'\(setting.path)'").compactMap(\.scalarText).joined(separator: ", ") + "]"
            #expect(shown == Self.defaultText(of: setting), "config/spout.yaml: \(setting.path)")
        }
    }

    @Test func documentedNamesAreKnown() throws {
        let variables = Set(SpoutConfiguration.environmentVariables.map(\.variable) + Self.executableVariables + Self.namedVariables)
        let keys = SpoutConfiguration.settings.map(\.path)
        let configuration = try Self.read("docs/configuration.md")
        for variable in Self.executableVariables {
            #expect(configuration.contains("`\(variable)`"), "docs/configuration.md does not document \(variable)")
        }
        for match in configuration.matches(of: /SPOUT_[A-Z0-9_]*[A-Z0-9]/) {
            #expect(variables.contains(String(match.output)), "docs/configuration.md names \(match.output), which Spout does not read")
        }
        for document in ["docs/configuration.md", "README.md"] {
            let text = try Self.read(document)
            // Dotted keys in code spans (`server.limits.maxBodyBytes`) must be keys or sections.
            for match in text.matches(of: /`((?:server|database)(?:\.[A-Za-z]+)+)`/) {
                let name = String(match.output.1)
                #expect(keys.contains { $0 == name || $0.hasPrefix(name + ".") }, "\(document) names `\(name)`, not a configuration key")
            }
        }
    }

    @Test func configurationBlocksParse() throws {
        let text = try Self.read("docs/configuration.md")
        var block: [String]?
        var blocks: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "```yaml" {
                block = []
            } else if line == "```", let lines = block {
                blocks.append(lines.joined(separator: "\n"))
                block = nil
            } else {
                block?.append(String(line))
            }
        }
        #expect(!blocks.isEmpty)
        for yaml in blocks {
            do {
                _ = try SpoutConfiguration.parse(yaml, file: "docs/configuration.md")
            } catch {
                Issue.record("a configuration example of docs/configuration.md does not parse: \(error)\n\(yaml)")
            }
        }
    }
}
