import CSQLite3
import SpoutCore

/// Reads result values of the current row into ``SQLValue``s.
///
/// A value is decided by the column's logical type (see ``SQLiteColumnTypes``) and then by the
/// value's storage class, since any SQLite column may hold any storage class:
/// - NULL is always `.null`.
/// - `.bool`: INTEGER 0 or 1 is `.bool`.
/// - `.date`: TEXT that parses as `YYYY-MM-DD` is `.date(days:)`.
/// - `.timestamp`: TEXT that parses with ``CivilTime/parseTimestamp(_:)-(String)`` is
///   `.timestamp(microseconds:)`.
/// - `.time`: TEXT is `.time`. `.json`: TEXT is `.json`.
/// - `.decimal`: TEXT that is a plain decimal number (`-?digits[.digits]`) is `.decimal`.
/// - `.double`: INTEGER is `.double` too.
/// - Otherwise by storage class: INTEGER `.integer`, REAL `.double`, TEXT `.text` (invalid
///   UTF-8 replaced by U+FFFD), BLOB `.bytes`.
enum SQLiteValueReader {
    /// The value of column `index` of the row `statement` is positioned on.
    static func value(of statement: OpaquePointer, at index: Int32, type: ColumnType) -> SQLValue {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_NULL:
            return .null
        case SQLITE_INTEGER:
            let integer = sqlite3_column_int64(statement, index)
            switch type {
            case .bool where integer == 0 || integer == 1:
                return .bool(integer == 1)
            case .double:
                return .double(Double(integer))
            default:
                return .integer(integer)
            }
        case SQLITE_FLOAT:
            return .double(sqlite3_column_double(statement, index))
        case SQLITE_BLOB:
            return .bytes(Self.blob(of: statement, at: index))
        default:
            return Self.textValue(of: statement, at: index, type: type)
        }
    }

    private static func blob(of statement: OpaquePointer, at index: Int32) -> [UInt8] {
        // sqlite3_column_bytes must follow sqlite3_column_blob (SQLite's documented order).
        let pointer = sqlite3_column_blob(statement, index)
        let count = Int(sqlite3_column_bytes(statement, index))
        guard let pointer, count > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    private static func textValue(of statement: OpaquePointer, at index: Int32, type: ColumnType) -> SQLValue {
        let pointer = sqlite3_column_text(statement, index)
        let count = Int(sqlite3_column_bytes(statement, index))
        let bytes = UnsafeBufferPointer(start: pointer, count: pointer == nil ? 0 : count)
        switch type {
        case .date:
            if let days = CivilTime.parseDate(bytes) { return .date(days: days) }
        case .timestamp:
            if let microseconds = CivilTime.parseTimestamp(bytes) { return .timestamp(microseconds: microseconds) }
        case .time:
            return .time(String(decoding: bytes, as: UTF8.self))
        case .json:
            return .json(String(decoding: bytes, as: UTF8.self))
        case .decimal:
            if SQLiteDecimalText.isPlainDecimal(bytes) { return .decimal(String(decoding: bytes, as: UTF8.self)) }
        default:
            break
        }
        return .text(String(decoding: bytes, as: UTF8.self))
    }
}

/// Recognizes the decimal numbers SQLite text may hold exactly.
enum SQLiteDecimalText {
    /// Whether `bytes` is `-?[0-9]+(\.[0-9]+)?`: digits as a database writes them, nothing else
    /// (no exponent, no blanks, no `NaN`).
    static func isPlainDecimal<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        var iterator = bytes.makeIterator()
        var byte = iterator.next()
        if byte == UInt8(ascii: "-") { byte = iterator.next() }
        var integerDigits = 0
        while let digit = byte, Self.isDigit(digit) {
            integerDigits += 1
            byte = iterator.next()
        }
        guard integerDigits > 0 else { return false }
        guard let separator = byte else { return true }
        guard separator == UInt8(ascii: ".") else { return false }
        var fractionDigits = 0
        while let digit = iterator.next() {
            guard Self.isDigit(digit) else { return false }
            fractionDigits += 1
        }
        return fractionDigits > 0
    }

    @inline(__always)
    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
