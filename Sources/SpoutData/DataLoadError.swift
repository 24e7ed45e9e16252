/// A problem loading or generating a data set that is not tied to a place in a file: a missing
/// file, tables that already exist, a row count that does not match, a database failure.
///
/// Errors at a place in a file are ``DataFileError``s; they pass through the loaders unchanged.
public struct DataLoadError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { self.name }

        /// A file could not be opened, read or written.
        public static let io = Code("I/O error")
        /// A required file (dump, schema script) does not exist.
        public static let missingFile = Code("missing file")
        /// The tables to create already exist and `replace` was not requested.
        public static let tablesExist = Code("tables exist")
        /// After loading, a table holds a different number of rows than were read.
        public static let rowCountMismatch = Code("row count mismatch")
        /// The database rejected a statement or a row; ``DataLoadError/underlying`` holds the
        /// driver's error.
        public static let database = Code("database error")
        /// An argument is out of range (for example a negative employee count).
        public static let invalidArgument = Code("invalid argument")
    }

    public var code: Code
    /// What happened, for people: file names, table names, counts.
    public var message: String
    /// The error that caused this one, when there is one (usually a `DatabaseError`).
    public var underlying: (any Error)?

    public init(_ code: Code, _ message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public var description: String {
        guard let underlying = self.underlying else { return self.message }
        return "\(self.message): \(String(reflecting: underlying))"
    }
}
