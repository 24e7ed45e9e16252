import CSQLite3
import SpoutCore

/// Writes result values of the current row as JSON straight from SQLite's buffers: integers
/// from `sqlite3_value_int64`, text from `sqlite3_value_text` and `sqlite3_value_bytes`, dates
/// parsed from those bytes, with no ``SQLValue`` and no `String` in between.
///
/// Contract: for every value, the bytes written are exactly those of
/// `JSONText.writeValue(SQLiteValueReader.value(of:at:type:), dateFormat:to:)`. Written here
/// (``Kind/plain`` and ``Kind/date`` columns): NULL, INTEGER, REAL and TEXT; in a `DATE`
/// column, text that parses as a date is a date. Text with a byte above 0x7F still goes
/// through `String(decoding:as:)`, which replaces invalid UTF-8. Everything else (a BLOB; any
/// value of a ``Kind/read`` column) is read by ``SQLiteValueReader`` and written by
/// ``JSONText/writeValue(_:dateFormat:to:)``.
///
/// Values are read through `sqlite3_column_value`, once per value, and then the
/// `sqlite3_value_*` functions, rather than four `sqlite3_column_*` calls that each enter and
/// leave the connection's mutex and check for a failed allocation. SQLite documents the value
/// returned by `sqlite3_column_value` as "unprotected": reading it with `sqlite3_value_*` is
/// not thread-safe, because those functions do not take the connection's mutex. Spout opens
/// connections with `SQLITE_OPEN_NOMUTEX` (there is no mutex to take) and confines each
/// connection to one thread at a time (see ``SQLiteConnection``), so nothing else touches the
/// statement meanwhile; the value is read before the next `sqlite3_step`, which invalidates it.
enum SQLiteJSONWriter {
    /// How the values of a column are written, from its declared type.
    enum Kind: Sendable {
        /// Integers stay integers and text stays text: a column read as integer, text, bytes,
        /// or of unknown type.
        case plain
        /// A `DATE` column: text that parses as `YYYY-MM-DD` is a date, other values as `plain`.
        case date
        /// Any other type (boolean, double, decimal, timestamp, time, JSON): ``SQLiteValueReader``
        /// decides.
        case read

        init(_ type: ColumnType) {
            switch type {
            case .integer, .text, .bytes, .unknown: self = .plain
            case .date: self = .date
            default: self = .read
            }
        }
    }

    /// Writes the value of column `index` of the row `statement` is positioned on, for a
    /// column of kind ``Kind/plain`` (`isDate` false) or ``Kind/date`` (`isDate` true); a
    /// ``Kind/read`` column's values go to ``writeRead(_:at:type:dateFormat:to:)``.
    @inline(__always)
    static func write(
        _ statement: OpaquePointer, at index: Int32, isDate: Bool, dateFormat: DateFormat, to out: inout ChunkedOutput
    ) {
        guard let value = sqlite3_column_value(statement, index) else {
            // Only without a statement; read as the reader reads it (by storage class).
            Self.writeRead(statement, at: index, type: .unknown, dateFormat: dateFormat, to: &out)
            return
        }
        switch sqlite3_value_type(value) {
        case SQLITE_NULL:
            out.append("null")
        case SQLITE_INTEGER:
            JSONText.writeInteger(sqlite3_value_int64(value), to: &out)
        case SQLITE_FLOAT:
            JSONText.writeDouble(sqlite3_value_double(value), to: &out)
        case SQLITE_TEXT:
            // TEXT already, so sqlite3_value_text converts nothing; sqlite3_value_bytes follows
            // it (SQLite's documented order).
            let pointer = sqlite3_value_text(value)
            let count = Int(sqlite3_value_bytes(value))
            let bytes = UnsafeBufferPointer(start: pointer, count: pointer == nil ? 0 : count)
            if isDate, let days = CivilTime.parseDate(bytes) {
                JSONText.writeDate(days: days, dateFormat: dateFormat, to: &out)
            } else {
                JSONText.writeString(unvalidatedUTF8: bytes, to: &out)
            }
        default:
            // A BLOB, which the reader reads as bytes whatever the column's type.
            Self.writeRead(statement, at: index, type: .bytes, dateFormat: dateFormat, to: &out)
        }
    }

    /// Writes the value as ``SQLiteValueReader`` reads it, written by ``JSONText``. Called
    /// before anything converted the value, so its storage class is still its own.
    static func writeRead(
        _ statement: OpaquePointer, at index: Int32, type: ColumnType, dateFormat: DateFormat,
        to out: inout ChunkedOutput
    ) {
        JSONText.writeValue(SQLiteValueReader.value(of: statement, at: index, type: type), dateFormat: dateFormat, to: &out)
    }
}
