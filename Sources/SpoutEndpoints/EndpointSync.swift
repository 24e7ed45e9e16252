import SpoutCore

/// How a GET endpoint answers sync reads (endpoint files: `sync: {key: [name], tables: {pet:
/// [name], event: [name]}}`): `?since=<cursor>` answers the rows that changed since the cursor
/// and the keys of those that left the caller's result, and a new cursor; `?since=0` the
/// whole result and a cursor (docs/endpoints.md, Sync reads).
public struct EndpointSync: Sendable, Hashable {
    /// The parameter carrying the cursor (`0`: from the beginning).
    public static let sinceParameter = "since"
    /// The `since` value that asks for the whole result.
    public static let fromTheBeginning = "0"

    /// The result columns (labels) that identify a row: never NULL, unique taken together.
    public var key: [String]
    /// The tables its rows and their details come from, each with its columns that hold the
    /// key of the row it belongs to, in the order of ``key``.
    public var tables: [TrackedTable]
    /// Where each table is named in the endpoint file, for the checks at start.
    public var positions: [String: Position]

    /// A place in an endpoint file.
    public struct Position: Sendable, Hashable {
        public var file: String
        public var line: Int?
        public var column: Int?

        func error(_ message: String) -> ConfigurationError {
            ConfigurationError(file: self.file, line: self.line, column: self.column, message: message)
        }
    }
}
