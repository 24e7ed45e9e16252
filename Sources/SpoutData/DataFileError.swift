/// A problem at a specific place of a data file (a MySQL dump or a TSV file).
///
/// `description` is `file:line:column: reason`, the format editors and terminals recognise,
/// e.g. `load_employees.dump:12:34: unterminated string`. ``file`` is the path exactly as it
/// was given to the parser or loader.
public struct DataFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Why the file could not be read.
    public enum Reason: Sendable, Hashable, CustomStringConvertible {
        /// A quoted string has no closing quote; the position is its opening quote.
        case unterminatedString
        /// A backquoted identifier has no closing backquote; the position is its opening backquote.
        case unterminatedIdentifier
        /// A `/* ... */` comment has no end; the position is its `/*`.
        case unterminatedComment
        /// The file ends inside a `( ... )` row; the position is the row's `(`.
        case truncatedRow
        /// The file ends inside an INSERT statement, outside a row (after `,` or without the
        /// final `;`); the position is the end of the file.
        case truncatedStatement
        /// A row has a different number of values than its table has columns; the position
        /// is the row's `(`.
        case wrongColumnCount(expected: Int, found: Int)
        /// A DATE value is not a valid `YYYY-MM-DD` date; the position is the value.
        case badDate(String)
        /// A character that cannot appear here; `found` shows it, `expected` says what may.
        case unexpectedCharacter(found: String, expected: String)
        /// A value that does not fit its column (type, length, NULL, allowed values); the
        /// position is the value.
        case invalidValue(String)
        /// An INSERT into a table that is not part of the schema being loaded.
        case unknownTable(String)

        public var description: String {
            switch self {
            case .unterminatedString: return "unterminated string"
            case .unterminatedIdentifier: return "unterminated quoted identifier"
            case .unterminatedComment: return "unterminated comment"
            case .truncatedRow: return "truncated row: the file ends before the row's closing ')'"
            case .truncatedStatement: return "truncated statement: the file ends before the INSERT's final ';'"
            case .wrongColumnCount(let expected, let found):
                return "wrong column count: expected \(expected) values, found \(found)"
            case .badDate(let text): return "bad date '\(text)' (expected a valid YYYY-MM-DD date)"
            case .unexpectedCharacter(let found, let expected): return "unexpected \(found), expected \(expected)"
            case .invalidValue(let detail): return "invalid value: \(detail)"
            case .unknownTable(let name): return "table `\(name)` is not part of the schema being loaded"
            }
        }
    }

    /// The file's path, as given.
    public var file: String
    /// 1-based line.
    public var line: Int
    /// 1-based column, in bytes.
    public var column: Int
    public var reason: Reason

    public init(file: String, position: SourcePosition, reason: Reason) {
        self.file = file
        self.line = position.line
        self.column = position.column
        self.reason = reason
    }

    public var position: SourcePosition { SourcePosition(line: self.line, column: self.column) }

    public var description: String { "\(self.file):\(self.line):\(self.column): \(self.reason)" }
}
