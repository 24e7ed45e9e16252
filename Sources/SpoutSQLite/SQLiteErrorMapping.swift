import CSQLite3
import SpoutCore

/// Maps SQLite result codes to ``DatabaseError`` codes.
///
/// The rules, by primary result code (`extended & 0xff`):
/// - `SQLITE_CONSTRAINT`: `_UNIQUE` and `_PRIMARYKEY` are ``DatabaseError/Code/uniqueViolation``,
///   every other constraint (NOT NULL, CHECK, FOREIGN KEY, ...) ``DatabaseError/Code/constraintViolation``.
/// - `SQLITE_INTERRUPT`: ``DatabaseError/Code/statementTimeout`` when the statement's deadline
///   stopped it, ``DatabaseError/Code/cancelled`` otherwise (``SQLiteConnection/cancel()``).
/// - `SQLITE_READONLY` (also raised by `PRAGMA query_only`): ``DatabaseError/Code/readOnly``.
/// - `SQLITE_BUSY`, `SQLITE_LOCKED` (another connection or process holds the lock past the
///   busy timeout): ``DatabaseError/Code/busy``.
/// - `SQLITE_ERROR` while preparing: ``DatabaseError/Code/invalidSQL``.
/// - `SQLITE_MISMATCH`, `SQLITE_RANGE`: ``DatabaseError/Code/invalidValue``.
/// - `SQLITE_CORRUPT`, `SQLITE_NOTADB`, `SQLITE_IOERR`, `SQLITE_CANTOPEN`:
///   ``DatabaseError/Code/connectionLost``; the connection is then broken.
/// - anything else: ``DatabaseError/Code/other``.
enum SQLiteErrorMapping {
    /// Where a failure happened; it decides what a plain `SQLITE_ERROR` means.
    enum Phase {
        /// `sqlite3_prepare*` or a script: a plain error is malformed SQL or an unknown object.
        case prepare
        /// `sqlite3_step`, binding, or a control statement: a plain error is a runtime failure.
        case run
    }

    /// `SQLITE_CONSTRAINT_UNIQUE`; the C macro is an expression Swift does not import.
    static let constraintUnique: Int32 = SQLITE_CONSTRAINT | (8 << 8)
    /// `SQLITE_CONSTRAINT_PRIMARYKEY`.
    static let constraintPrimaryKey: Int32 = SQLITE_CONSTRAINT | (6 << 8)

    /// `SQLITE_CONSTRAINT_NOTNULL`.
    static let constraintNotNull: Int32 = SQLITE_CONSTRAINT | (5 << 8)
    /// `SQLITE_CONSTRAINT_CHECK`.
    static let constraintCheck: Int32 = SQLITE_CONSTRAINT | (1 << 8)
    /// `SQLITE_CONSTRAINT_FOREIGNKEY`.
    static let constraintForeignKey: Int32 = SQLITE_CONSTRAINT | (3 << 8)

    /// The table and columns a unique, primary key or NOT NULL violation names in its message,
    /// the CHECK a check violation reports, or that a foreign key failed
    /// (``SpoutCore/ViolatedConstraint/sqlite(message:)``); nil for other errors.
    static func violated(_ extended: Int32, message: String) -> ViolatedConstraint? {
        let traced = [Self.constraintUnique, Self.constraintPrimaryKey, Self.constraintNotNull, Self.constraintCheck, Self.constraintForeignKey]
        guard traced.contains(extended) else { return nil }
        return ViolatedConstraint.sqlite(message: message)
    }

    /// The error code for an extended result code.
    static func code(forExtendedResult extended: Int32, phase: Phase, deadlineExpired: Bool) -> DatabaseError.Code {
        switch extended & 0xff {
        case SQLITE_CONSTRAINT:
            if extended == Self.constraintUnique || extended == Self.constraintPrimaryKey {
                return .uniqueViolation
            }
            return .constraintViolation
        case SQLITE_INTERRUPT:
            return deadlineExpired ? .statementTimeout : .cancelled
        case SQLITE_READONLY:
            return .readOnly
        case SQLITE_BUSY, SQLITE_LOCKED:
            return .busy
        case SQLITE_FULL:
            return .storageFull
        case SQLITE_ERROR:
            return phase == .prepare ? .invalidSQL : .other
        case SQLITE_MISMATCH, SQLITE_RANGE:
            return .invalidValue
        case SQLITE_CORRUPT, SQLITE_NOTADB, SQLITE_IOERR, SQLITE_CANTOPEN:
            return .connectionLost
        default:
            return .other
        }
    }

    /// The text of `sqlite3_errmsg`, or `sqlite3_errstr` of `code` when there is no handle.
    static func message(_ handle: OpaquePointer?, code: Int32) -> String {
        if let handle, let text = sqlite3_errmsg(handle) {
            return String(cString: text)
        }
        if let text = sqlite3_errstr(code) {
            return String(cString: text)
        }
        return "SQLite error \(code)"
    }
}
