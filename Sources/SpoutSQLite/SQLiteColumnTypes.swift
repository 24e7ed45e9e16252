import CSQLite3
import SpoutCore

/// Logical column types from SQLite declared types.
///
/// SQLite stores values by storage class, not by column type, so the declared type
/// (`sqlite3_column_decltype`) is only a hint. The rules, case-insensitive, first match wins
/// (SQLite's affinity rules extended with Spout's date, time, boolean and JSON types):
///
/// | declared type contains                | type         |
/// |---------------------------------------|--------------|
/// | `INT`                                 | `.integer`   |
/// | `BOOL`                                | `.bool`      |
/// | exactly `DATE`                        | `.date`      |
/// | `DATETIME` or `TIMESTAMP`             | `.timestamp` |
/// | exactly `TIME`                        | `.time`      |
/// | `JSON`                                | `.json`      |
/// | `CHAR`, `CLOB` or `TEXT`              | `.text`      |
/// | `BLOB`                                | `.bytes`     |
/// | `REAL`, `FLOA` or `DOUB`              | `.double`    |
/// | `NUMERIC` or `DECIMAL`                | `.decimal`   |
/// | anything else, or no declared type    | `.unknown`   |
///
/// "Exactly" ignores a size suffix: `TIME(3)` is a time. Result columns that are expressions
/// have no declared type and are `.unknown`; their values are read by storage class.
enum SQLiteColumnTypes {
    /// The logical type of a declared column type; `nil` (an expression) is `.unknown`.
    static func type(declared: String?) -> ColumnType {
        guard let declared, !declared.isEmpty else { return .unknown }
        let upper = declared.uppercased()
        let base = Self.baseName(upper)
        if upper.contains("INT") { return .integer }
        if upper.contains("BOOL") { return .bool }
        if base == "DATE" { return .date }
        if upper.contains("DATETIME") || upper.contains("TIMESTAMP") { return .timestamp }
        if base == "TIME" { return .time }
        if upper.contains("JSON") { return .json }
        if upper.contains("CHAR") || upper.contains("CLOB") || upper.contains("TEXT") { return .text }
        if upper.contains("BLOB") { return .bytes }
        if upper.contains("REAL") || upper.contains("FLOA") || upper.contains("DOUB") { return .double }
        if upper.contains("NUMERIC") || upper.contains("DECIMAL") { return .decimal }
        return .unknown
    }

    /// The result columns of a prepared statement: labels from `sqlite3_column_name`, types
    /// from `sqlite3_column_decltype`. Both are available right after preparing.
    static func columns(of statement: OpaquePointer) -> [Column] {
        let count = Int(sqlite3_column_count(statement))
        var columns: [Column] = []
        columns.reserveCapacity(count)
        for index in 0..<Int32(count) {
            let label = sqlite3_column_name(statement, index).map { String(cString: $0) } ?? ""
            let declared = sqlite3_column_decltype(statement, index).map { String(cString: $0) }
            columns.append(Column(label: label, type: Self.type(declared: declared)))
        }
        return columns
    }

    /// The declared type without a parenthesized size and surrounding blanks: `TIME(3)` → `TIME`.
    private static func baseName(_ upper: String) -> Substring {
        var name = upper.prefix { $0 != "(" }
        while name.first == " " { name.removeFirst() }
        while name.last == " " { name.removeLast() }
        return name
    }
}
