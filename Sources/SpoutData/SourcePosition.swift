/// A place in a text file: 1-based line and 1-based column.
///
/// Columns count bytes (UTF-8 code units), so a position is exact for any encoding of the
/// file; for the ASCII content of dump files it is also the character column.
public struct SourcePosition: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var line: Int
    public var column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    public var description: String { "\(self.line):\(self.column)" }

    public static func < (lhs: SourcePosition, rhs: SourcePosition) -> Bool {
        (lhs.line, lhs.column) < (rhs.line, rhs.column)
    }
}
