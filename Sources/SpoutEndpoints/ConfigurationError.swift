/// A problem in a configuration file, an endpoint file, an SQL file or an environment variable.
///
/// ``description`` reads `file:line:column: problem` (without the parts that are unknown), so
/// editors and terminals can jump to the spot. Loading stops at the first problem found.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file the problem is in, as given to the loader (or `environment` for variables).
    public var file: String
    /// 1-based line of the problem, when known.
    public var line: Int?
    /// 1-based column of the problem, when known.
    public var column: Int?
    /// What is wrong, in a sentence that names the key or value at fault.
    public var message: String

    public init(file: String, line: Int? = nil, column: Int? = nil, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.message = message
    }

    public var description: String {
        var text = self.file
        if let line = self.line {
            text += ":\(line)"
            if let column = self.column { text += ":\(column)" }
        }
        return text + ": " + self.message
    }
}
