import CLibPQ
import SpoutCore

/// Maps PostgreSQL SQLSTATEs to ``DatabaseError/Code``.
enum PostgresErrorMapping {
    /// The error code for `sqlState`.
    /// - Parameter cancelRequested: whether ``PostgresConnection/cancel()`` was called during
    ///   the statement; it tells a cancel (57014 either way) from a statement timeout.
    static func code(forSQLState sqlState: String?, cancelRequested: Bool) -> DatabaseError.Code {
        guard let sqlState, sqlState.utf8.count == 5 else { return .other }
        switch sqlState {
        case "23505": return .uniqueViolation
        case "57014": return cancelRequested ? .cancelled : .statementTimeout
        case "25006": return .readOnly
        // lock_not_available (`lock_timeout` or NOWAIT ran out waiting for a lock), and a
        // transaction rolled back for another's sake (deadlock_detected): contention, which a
        // retry resolves.
        case "55P03", "40P01": return .busy
        case "40001": return .serializationFailure
        case "53100": return .storageFull
        // insufficient_privilege: a row-level security policy refused the row (a token
        // without the claim a policy checks, another owner's row), or the role lacks a grant.
        case "42501": return .permissionDenied
        // Spout's text is UTF-8 (client_encoding): a character with no equivalent in the
        // database's encoding came from the statement, which is to say from its arguments.
        case "22P05": return .unrepresentableText
        // Spout only sends valid UTF-8, so an invalid byte sequence is the database's own text
        // that cannot be converted to UTF-8 (a SQL_ASCII database holding other bytes): not the
        // caller's mistake.
        case "22021": return .other
        case "57P01", "57P02", "57P03": return .connectionLost
        default: break
        }
        switch sqlState.prefix(2) {
        case "23": return .constraintViolation
        case "22": return .invalidValue
        case "42": return .invalidSQL
        case "08": return .connectionLost
        default: return .other
        }
    }

    /// Whether a statement that failed with `sqlState` failed because the server is a standby
    /// while the work wanted to write (`wantsWrites`: Spout did not make the session
    /// read-only; a read-only lease's write is the endpoint's mistake,
    /// ``SpoutCore/DatabaseError/Code/readOnly``, wherever it runs):
    /// read_only_sql_transaction (25006) in a transaction Spout opened `READ WRITE` can only
    /// come from recovery, which keeps every transaction read-only; feature_not_supported
    /// (0A000), which `BEGIN READ WRITE` and `SET transaction_read_only = off` answer during
    /// recovery, only when the server says it is in hot standby (`in_hot_standby`, reported
    /// by every server since PostgreSQL 14 when the session starts and when it changes).
    static func meansStandby(sqlState: String?, inHotStandby: String?, wantsWrites: Bool) -> Bool {
        guard wantsWrites else { return false }
        return sqlState == "25006" || (sqlState == "0A000" && inHotStandby == "on")
    }

    /// Whether `BEGIN READ WRITE` failed with `sqlState` because the server is in recovery: it
    /// answers nothing else with feature_not_supported (0A000), behind a pooler too, which may
    /// not pass `in_hot_standby` on.
    static func beginReadWriteMeansStandby(sqlState: String?) -> Bool {
        sqlState == "0A000"
    }

    /// libpq's `PG_DIAG_SQLSTATE` field code (`'C'`).
    static let sqlStateField = Int32(UInt8(ascii: "C"))

    /// What a unique violation (23505: its index and schema; the key's columns are looked up
    /// in the catalog, as the server leaves its message's key out under row-level security), a
    /// NOT NULL violation (23502: its column), a foreign-key violation (23503) or a check
    /// violation (23514) (their constraint, table and schema; their columns are looked up too)
    /// concerns; nil for any other error.
    static func violated(in result: OpaquePointer, sqlState: String?) -> ViolatedConstraint? {
        func field(_ code: UInt8) -> String? {
            PQresultErrorField(result, Int32(code)).map { String(cString: $0) }
        }
        // PG_DIAG_CONSTRAINT_NAME, PG_DIAG_SCHEMA_NAME, PG_DIAG_TABLE_NAME, PG_DIAG_COLUMN_NAME.
        let table = field(UInt8(ascii: "t"))
        switch sqlState {
        case "23505":
            guard let index = field(UInt8(ascii: "n")), let schema = field(UInt8(ascii: "s")) else { return nil }
            return ViolatedConstraint(columns: [], index: index, schema: schema, table: table)
        case "23502":
            guard let column = field(UInt8(ascii: "c")) else { return nil }
            return ViolatedConstraint(columns: [column], schema: field(UInt8(ascii: "s")), table: table)
        case "23503":
            guard let constraint = field(UInt8(ascii: "n")), let schema = field(UInt8(ascii: "s")), table != nil else { return nil }
            return ViolatedConstraint(columns: [], schema: schema, table: table, foreignKey: constraint)
        case "23514":
            // A domain's check names no table: nothing to trace.
            guard let check = field(UInt8(ascii: "n")), let schema = field(UInt8(ascii: "s")), table != nil else { return nil }
            return ViolatedConstraint(columns: [], schema: schema, table: table, check: check)
        default:
            return nil
        }
    }

    /// The SQLSTATE of an error result, if any.
    static func sqlState(of result: OpaquePointer) -> String? {
        guard let field = PQresultErrorField(result, self.sqlStateField) else { return nil }
        return String(cString: field)
    }

    /// A libpq message without its trailing newline.
    static func message(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "" }
        var message = String(cString: text)
        while message.last?.isNewline == true { message.removeLast() }
        return message
    }
}
