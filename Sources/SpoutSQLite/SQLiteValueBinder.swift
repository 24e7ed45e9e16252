import CSQLite3
import SpoutCore

/// Binds ``SQLValue``s to statement parameters.
///
/// | value        | bound as                                                      |
/// |--------------|---------------------------------------------------------------|
/// | `.null`      | NULL                                                          |
/// | `.integer`   | INTEGER                                                       |
/// | `.double`    | REAL                                                          |
/// | `.decimal`   | TEXT (the digits, never rounded)                              |
/// | `.bool`      | INTEGER 0 or 1                                                |
/// | `.text`, `.time`, `.json` | TEXT                                             |
/// | `.date`      | TEXT `YYYY-MM-DD`                                             |
/// | `.timestamp` | TEXT `YYYY-MM-DD HH:MM:SS[.ffffff]` (UTC)                     |
/// | `.bytes`     | BLOB (an empty array is an empty BLOB, not NULL)              |
/// | `.array`     | TEXT holding a JSON array (for `json_each`)                   |
///
/// SQLite copies every text and blob (`SQLITE_TRANSIENT`), so the values need not outlive the call.
enum SQLiteValueBinder {
    /// Binds `value` to parameter `index` (1-based); returns SQLite's result code.
    static func bind(_ value: SQLValue, to statement: OpaquePointer, at index: Int32) -> Int32 {
        switch value {
        case .null:
            return sqlite3_bind_null(statement, index)
        case .integer(let integer):
            return sqlite3_bind_int64(statement, index, integer)
        case .double(let double):
            return sqlite3_bind_double(statement, index, double)
        case .bool(let bool):
            return sqlite3_bind_int64(statement, index, bool ? 1 : 0)
        case .decimal(let text), .text(let text), .time(let text), .json(let text):
            return Self.bindText(text, to: statement, at: index)
        case .date(let days):
            return Self.bindText(CivilTime.formatDate(days: days), to: statement, at: index)
        case .timestamp(let microseconds):
            return Self.bindText(CivilTime.formatSQLTimestamp(microseconds: microseconds), to: statement, at: index)
        case .bytes(let bytes):
            guard !bytes.isEmpty else { return sqlite3_bind_zeroblob(statement, index, 0) }
            return bytes.withUnsafeBytes { buffer in
                sqlite3_bind_blob64(
                    statement, index, buffer.baseAddress, UInt64(buffer.count), spout_sqlite_transient())
            }
        case .array(let elements):
            return Self.bindText(SQLiteJSONArrayText.text(of: elements), to: statement, at: index)
        }
    }

    private static func bindText(_ text: String, to statement: OpaquePointer, at index: Int32) -> Int32 {
        var text = text
        return text.withUTF8 { buffer in
            // A nil pointer would bind NULL: an empty string gets a pointer to an empty C string.
            guard let base = buffer.baseAddress, buffer.count > 0 else {
                return sqlite3_bind_text(statement, index, "", 0, spout_sqlite_transient())
            }
            return base.withMemoryRebound(to: CChar.self, capacity: buffer.count) { characters in
                sqlite3_bind_text64(
                    statement, index, characters, UInt64(buffer.count), spout_sqlite_transient(), UInt8(SQLITE_UTF8))
            }
        }
    }
}
