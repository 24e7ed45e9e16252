/// A value read from, or bound to, a database, in the driver-neutral form Spout encodes.
///
/// Both drivers map their native values to these cases the same way, which is what makes
/// PostgreSQL and SQLite produce byte-identical JSON for the same rows:
///
/// | case          | PostgreSQL                        | SQLite                                   |
/// |---------------|-----------------------------------|------------------------------------------|
/// | `.integer`    | int2, int4, int8, oid             | INTEGER                                  |
/// | `.double`     | float4, float8                    | REAL                                     |
/// | `.decimal`    | numeric (digits as stored)        | column declared DECIMAL/NUMERIC holding text |
/// | `.bool`       | boolean                           | column declared BOOLEAN                  |
/// | `.text`       | text, varchar, char, uuid, enum   | TEXT                                     |
/// | `.date`       | date                              | column declared DATE holding `YYYY-MM-DD` |
/// | `.timestamp`  | timestamp (read as UTC), timestamptz | column declared DATETIME/TIMESTAMP    |
/// | `.time`       | time                              | column declared TIME                     |
/// | `.json`       | json, jsonb                       | column declared JSON                     |
/// | `.bytes`      | bytea                             | BLOB                                     |
/// | `.array`      | one-dimensional arrays            | (none)                                   |
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case double(Double)
    /// An exact decimal number, as its canonical text (`-12.3400`, `NaN`); never rounded through `Double`.
    case decimal(String)
    case bool(Bool)
    /// Text. Invalid UTF-8 from the database has already been replaced by U+FFFD.
    case text(String)
    /// A calendar day: days since 1970-01-01 (negative before).
    case date(days: Int64)
    /// An instant: microseconds since 1970-01-01T00:00:00Z.
    case timestamp(microseconds: Int64)
    /// A time of day as `HH:MM:SS` with optional fractional seconds.
    case time(String)
    /// JSON text, embedded into the output as JSON (not as a string).
    case json(String)
    case bytes([UInt8])
    case array([SQLValue])
}

extension SQLValue {
    /// Whether the value is SQL NULL.
    @inlinable
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}

extension SQLValue: ExpressibleByIntegerLiteral, ExpressibleByStringLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral
{
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
}
