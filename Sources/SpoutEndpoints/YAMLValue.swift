import Yams

/// A YAML node and the file it came from: reads configuration values and turns every mistake
/// into a ``ConfigurationError`` at the node's line and column.
///
/// Only used while loading; nodes are not kept (Yams nodes are not `Sendable`).
struct YAMLValue {
    let node: Node
    let file: String

    init(node: Node, file: String) {
        self.node = node
        self.file = file
    }

    /// Parses the single document of `text`; nil for an empty document.
    static func parse(_ text: String, file: String) throws(ConfigurationError) -> YAMLValue? {
        do {
            guard let node = try Yams.compose(yaml: text) else { return nil }
            return YAMLValue(node: node, file: file)
        } catch let error as YamlError {
            throw Self.configurationError(error, file: file, text: text)
        } catch {
            throw ConfigurationError(file: file, message: "cannot read YAML: \(error)")
        }
    }

    private static func configurationError(_ error: YamlError, file: String, text: String) -> ConfigurationError {
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            var message = "invalid YAML: \(problem)"
            if let context { message += " (\(context.text))" }
            return ConfigurationError(file: file, line: mark.line, column: mark.column, message: message)
        case .duplicatedKeysInMapping(let duplicates, let context):
            let keys = duplicates.sorted().map { "'\($0)'" }.joined(separator: ", ")
            let line = duplicates.sorted().first.flatMap { Self.secondOccurrence(of: $0, in: text, after: context.mark) }
            return ConfigurationError(
                file: file, line: line ?? context.mark.line, column: context.mark.column,
                message: "duplicate key \(keys) in the same mapping")
        default:
            return ConfigurationError(file: file, message: "invalid YAML: \(error)")
        }
    }

    /// The line of the second `key:` at the mapping's indentation (Yams reports where the
    /// mapping starts); nil when it cannot be found (flow mappings, quoted keys).
    private static func secondOccurrence(of key: String, in text: String, after mark: Mark) -> Int? {
        let indentation = String(repeating: " ", count: mark.column - 1)
        var found = 0
        for (offset, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
        where offset + 1 >= mark.line {
            guard line.hasPrefix(indentation + key) else { continue }
            let rest = line.dropFirst(indentation.count + key.count).drop { $0 == " " }
            guard rest.hasPrefix(":") else { continue }
            found += 1
            if found == 2 { return offset + 1 }
        }
        return nil
    }

    var line: Int? { self.node.mark?.line }
    var column: Int? { self.node.mark?.column }

    /// An error located at this node.
    func error(_ message: String) -> ConfigurationError {
        ConfigurationError(file: self.file, line: self.line, column: self.column, message: message)
    }

    /// Whether the node is YAML null (`~`, `null`, or nothing after the colon).
    var isNull: Bool {
        guard case .scalar(let scalar) = self.node, scalar.style == .plain else { return false }
        return ["", "~", "null", "Null", "NULL"].contains(scalar.string)
    }

    /// The text of a scalar, or nil for other nodes. Null scalars give their text (`~`).
    var scalarText: String? {
        if case .scalar(let scalar) = self.node { return scalar.string }
        return nil
    }

    /// Whether the scalar was written with a block style (`|` or `>`): its content starts on
    /// the line after the node's mark.
    var isBlockScalar: Bool {
        guard case .scalar(let scalar) = self.node else { return false }
        return scalar.style == .literal || scalar.style == .folded
    }

    /// A mapping whose keys must all be in `allowed`; `what` names it in errors.
    func mapping(_ what: String, allowed: [String]? = nil) throws(ConfigurationError) -> YAMLMapping {
        guard case .mapping(let mapping) = self.node else {
            throw self.error("\(what) must be a mapping (key: value lines)")
        }
        var entries: [YAMLMapping.Entry] = []
        for (keyNode, valueNode) in mapping {
            let key = YAMLValue(node: keyNode, file: self.file)
            guard let name = key.scalarText else { throw key.error("a key of \(what) must be a plain string") }
            if let allowed, !allowed.contains(name) {
                let known = allowed.joined(separator: ", ")
                throw key.error("unknown key '\(name)' in \(what) (known keys: \(known))")
            }
            entries.append(YAMLMapping.Entry(name: name, key: key, value: YAMLValue(node: valueNode, file: self.file)))
        }
        return YAMLMapping(owner: self, entries: entries)
    }

    /// The items of a sequence.
    func sequence(_ what: String) throws(ConfigurationError) -> [YAMLValue] {
        guard case .sequence(let sequence) = self.node else { throw self.error("\(what) must be a list") }
        return sequence.map { YAMLValue(node: $0, file: self.file) }
    }

    /// A list that may be written as one scalar: the scalar itself as the only item, else the
    /// items of the sequence (`roles: editor` is `roles: [editor]`).
    func scalarOrSequence(_ what: String) throws(ConfigurationError) -> [YAMLValue] {
        self.scalarText != nil ? [self] : try self.sequence(what)
    }

    /// A non-null scalar as text.
    func string(_ what: String) throws(ConfigurationError) -> String {
        guard let text = self.scalarText, !self.isNull else { throw self.error("\(what) must be a text value") }
        return text
    }

    /// A non-empty scalar as text.
    func nonEmptyString(_ what: String) throws(ConfigurationError) -> String {
        let text = try self.string(what)
        guard !text.trimmedBlanks.isEmpty else { throw self.error("\(what) must not be empty") }
        return text
    }

    /// A decimal integer in `range`.
    func integer(_ what: String, in range: ClosedRange<Int> = Int.min...Int.max) throws(ConfigurationError) -> Int {
        guard let text = self.scalarText, let value = Int(text.trimmedBlanks) else {
            throw self.error("\(what) must be an integer, not '\(self.scalarText ?? "a collection")'")
        }
        guard range.contains(value) else { throw self.error("\(what) must be in \(range.lowerBound)...\(range.upperBound), not \(value)") }
        return value
    }

    /// `true` or `false` (YAML 1.2; `yes`/`no` are not booleans).
    func boolean(_ what: String) throws(ConfigurationError) -> Bool {
        switch self.scalarText?.lowercased() {
        case "true": return true
        case "false": return false
        default: throw self.error("\(what) must be true or false, not '\(self.scalarText ?? "a collection")'")
        }
    }
}

/// The entries of a YAML mapping, in file order.
struct YAMLMapping {
    struct Entry {
        var name: String
        var key: YAMLValue
        var value: YAMLValue
    }

    let owner: YAMLValue
    let entries: [Entry]

    /// The value of `key`, or nil when absent.
    subscript(_ key: String) -> YAMLValue? {
        self.entries.first { $0.name == key }?.value
    }

    /// The value of `key`, or nil when absent or null.
    func value(_ key: String) -> YAMLValue? {
        guard let value = self[key], !value.isNull else { return nil }
        return value
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces, tabs and line breaks.
    var trimmedBlanks: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        var slice = Substring(self)
        while let first = slice.first, isSpace(first) { slice.removeFirst() }
        while let last = slice.last, isSpace(last) { slice.removeLast() }
        return String(slice)
    }
}
