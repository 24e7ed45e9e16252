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

    /// Whether `a` and `b` hold equal columns in the same order: `a == b`, comparing the
    /// columns where they lie rather than copying each (the array's `==` retains every string
    /// of every column it compares; result column lists are compared on every request).
    @inlinable
    public static func sameList(_ a: [Column], _ b: [Column]) -> Bool {
        a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in
                guard a.count == b.count else { return false }
                if a.baseAddress == b.baseAddress { return true }
                for index in 0..<a.count where a[index] != b[index] { return false }
                return true
            }
        }
    }
}
