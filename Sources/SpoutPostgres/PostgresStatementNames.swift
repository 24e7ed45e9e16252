/// The names a ``PostgresConnection`` gives its server-side objects: prepared statements
/// (`spout_1`, `spout_2`, ...), each prepared once per connection and keyed by its SQL text,
/// and server cursors (`spout_c1`, `spout_c2`, ...). A value without I/O.
///
/// A name is reserved (``reservePreparedName()``) before the `PREPARE` is sent and recorded
/// (``prepared(_:as:)``) once it succeeded, so a failed `PREPARE` never leaves a name that
/// refers to nothing, and names are never reused.
struct PostgresStatementNames: Sendable, Equatable {
    /// ``key(_:_:)`` → prepared statement name, for the statements prepared successfully.
    private(set) var prepared: [String: String] = [:]
    private var preparedCount = 0
    private var cursorCount = 0

    /// A new prepared statement name, not used before on this connection.
    mutating func reservePreparedName() -> String {
        self.preparedCount += 1
        return "spout_\(self.preparedCount)"
    }

    /// The statement `key` (``key(_:_:)``) was prepared as `name`.
    mutating func prepared(_ key: String, as name: String) {
        self.prepared[key] = name
    }

    /// What a prepared statement is found by: its SQL text, and the parameter types it was
    /// prepared with when any is declared (``PostgresTextParameters/typeSignature``).
    static func key(_ text: String, _ parameters: PostgresTextParameters) -> String {
        let signature = parameters.typeSignature
        return signature.isEmpty ? text : text + "\u{0}" + signature
    }

    /// A new server cursor name, not used before on this connection.
    mutating func nextCursorName() -> String {
        self.cursorCount += 1
        return "spout_c\(self.cursorCount)"
    }
}
