import SpoutCore

/// One row of an extended INSERT in a MySQL dump, as read by ``MySQLDumpParser``.
public struct DumpRow: Sendable, Hashable {
    /// The table named by the INSERT, without quotes or database qualifier.
    public var table: String
    /// The row's values as written: numbers as `.integer` (`.decimal` with a fraction or when
    /// too large for 64 bits, `.double` with an exponent), quoted strings as `.text`, `NULL` as
    /// `.null`, `TRUE`/`FALSE` as `.integer(1)`/`.integer(0)`.
    public var values: [SQLValue]
    /// Where the row's `(` is.
    public var position: SourcePosition

    public init(table: String, values: [SQLValue], position: SourcePosition) {
        self.table = table
        self.values = values
        self.position = position
    }
}
