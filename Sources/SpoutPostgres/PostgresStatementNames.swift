/// The names a ``PostgresConnection`` gives its server-side objects: prepared statements
/// (`spout_1`, `spout_2`, ...), each prepared once per connection and keyed by its SQL text,
/// and server cursors (`spout_c1`, `spout_c2`, ...). A value without I/O.
///
/// A name is reserved (``reservePreparedName()``) before the `PREPARE` is sent and recorded
/// (``prepared(_:as:)``) once it succeeded, so a failed `PREPARE` never leaves a name that
/// refers to nothing, and names are never reused.
struct PostgresStatementNames: Sendable, Equatable {
    /// SQL text → prepared statement name, for the statements prepared successfully.
    private(set) var prepared: [String: String] = [:]
    private var preparedCount = 0
    private var cursorCount = 0

    /// A new prepared statement name, not used before on this connection.
    mutating func reservePreparedName() -> String {
        self.preparedCount += 1
        return "spout_\(self.preparedCount)"
    }

    /// `text` was prepared as `name`.
    mutating func prepared(_ text: String, as name: String) {
        self.prepared[text] = name
    }

    /// A new server cursor name, not used before on this connection.
    mutating func nextCursorName() -> String {
        self.cursorCount += 1
        return "spout_c\(self.cursorCount)"
    }
}
