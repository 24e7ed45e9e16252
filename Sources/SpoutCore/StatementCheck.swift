/// A database that checks a statement without running it: what `spout serve` and `spout check`
/// do with every statement of every endpoint at start, and how the types a database infers for
/// parameters are read. Each driver prepares the statement its
/// own way (PostgreSQL: `PQprepare` and `PQdescribePrepared` of the unnamed statement, in a
/// read-only transaction rolled back; SQLite: `sqlite3_prepare_v2`, then finalized).
///
/// Contract:
/// - `sql` never runs: none of its rows is read or written, no lock of its is kept, and the
///   connection is left as it was found (idle, no transaction of the check's left open).
/// - The statement is prepared as a request prepares it: parameters of no declared type, the
///   database inferring each from its place, except those named in `bytesParameters`, which
///   are declared as the driver declares bytes (PostgreSQL: `bytea`).
/// - A statement the database refuses (syntax, an unknown table or column, a type it cannot
///   infer) throws ``StatementRefused`` with the database's message; a connection that fails
///   meanwhile throws its ``DatabaseError`` instead: the statement was not judged.
public protocol StatementChecking: DatabaseConnection {
    /// Prepares `sql` (see the protocol's contract) and returns what the database made of it:
    /// its columns and, with `parameterTypes`, the type it gives each parameter (on
    /// PostgreSQL one more round trip, to name them).
    func describe(_ sql: ParsedSQL, bytesParameters: Set<String>, parameterTypes: Bool) throws -> StatementDescription
}

/// What a database made of a statement it prepared (``StatementChecking``).
public struct StatementDescription: Sendable, Hashable {
    /// The columns its rows would have, in order (empty for a statement that returns none).
    public var columns: [Column]
    /// The type the database gives each parameter, in placeholder order, by the database's
    /// own name for it (PostgreSQL's `format_type`: `integer`, `timestamp without time zone`,
    /// `text[]`); empty when not asked for, and where parameters have no type (SQLite).
    public var parameterTypes: [String]

    public init(columns: [Column], parameterTypes: [String] = []) {
        self.columns = columns
        self.parameterTypes = parameterTypes
    }
}

/// The database refused to prepare a statement (``StatementChecking/describe(_:bytesParameters:parameterTypes:)``).
public struct StatementRefused: Error, Sendable, Hashable, CustomStringConvertible {
    /// The database's own message (for the operator: it may quote the SQL).
    public var message: String
    /// The line of the statement's text (1-based) the database points at, when it points at
    /// one (PostgreSQL's error position, SQLite's error offset).
    public var line: Int?

    public init(message: String, line: Int? = nil) {
        self.message = message
        self.line = line
    }

    public var description: String { self.message }

    /// The 1-based line of `text` that holds its `offset`-th Unicode scalar (0-based), clamped
    /// to the text.
    public static func line(in text: String, scalarOffset offset: Int) -> Int {
        1 + text.unicodeScalars.prefix(max(0, offset)).count(where: { $0 == "\n" })
    }

    /// The 1-based line of `text` that holds its `offset`-th UTF-8 byte (0-based), clamped to
    /// the text.
    public static func line(in text: String, byteOffset offset: Int) -> Int {
        1 + text.utf8.prefix(max(0, offset)).count(where: { $0 == 0x0A })
    }
}

extension DatabaseError.Code {
    /// Whether an error of this code says the connection or the server failed, rather than
    /// that a statement was wrong: the statement was not judged.
    public var isConnectionFailure: Bool {
        Self.connectionFailures.contains(self)
    }

    private static let connectionFailures: Set<DatabaseError.Code> = [
        .connectionFailed, .connectionLost, .notAnswering, .poolExhausted, .cancelled, .statementTimeout, .busy,
    ]
}
