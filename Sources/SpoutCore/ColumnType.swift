/// The logical type of a result column, as reported by the driver before the first row.
///
/// The type decides how values are bound when a column feeds a child query (see
/// ``RowStream/attach(_:_:)``) and is shown in API documentation. Encoders look at the values
/// themselves, so a column of type `.unknown` (an SQLite expression) still encodes correctly.
public indirect enum ColumnType: Sendable, Hashable {
    case integer
    case double
    case decimal
    case bool
    case text
    case date
    case timestamp
    case time
    case json
    case bytes
    case array(ColumnType)
    /// The driver cannot tell before reading values (SQLite expressions without a declared type).
    case unknown
}

/// A result column: its label (`AS "employeeNumber"`) and logical type.
public struct Column: Sendable, Hashable {
    public var label: String
    public var type: ColumnType
    /// The database's own type name when the driver knows it (`int4`, `bpchar`, `date` on
    /// PostgreSQL). Batched child queries cast their key arrays to it so indexes stay usable.
    public var databaseTypeName: String?

    public init(label: String, type: ColumnType, databaseTypeName: String? = nil) {
        self.label = label
        self.type = type
        self.databaseTypeName = databaseTypeName
    }
}
