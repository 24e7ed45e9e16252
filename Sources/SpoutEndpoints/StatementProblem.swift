/// A statement of an endpoint that the database does not prepare, and where it is written.
public struct StatementProblem: Sendable, Hashable, CustomStringConvertible {
    /// The SQL file (its dialect's override when it has one), or the endpoint file for inline
    /// SQL and for what the endpoint file adds (a page's statement).
    public var file: String
    /// The line in ``file``: the one the database points at when it does, else the SQL's first.
    public var line: Int
    /// What the statement is and the database's message.
    public var message: String

    public init(file: String, line: Int, message: String) {
        self.file = file
        self.line = line
        self.message = message
    }

    /// `file:line: message`, as configuration errors read.
    public var description: String { "\(self.file):\(self.line): \(self.message)" }

    /// `problems` as the configuration error that stops a start: the first one's place and
    /// message, then every other as `file:line: message` on a line of its own; nil for none.
    public static func configurationError(_ problems: [StatementProblem]) -> ConfigurationError? {
        guard let first = problems.first else { return nil }
        let rest = problems.dropFirst().map { "\n" + $0.description }.joined()
        return ConfigurationError(file: first.file, line: first.line, message: first.message + rest)
    }
}
