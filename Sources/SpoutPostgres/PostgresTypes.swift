import CLibPQ
import SpoutCore

/// How the text form of one PostgreSQL scalar type is turned into a ``SQLValue``.
enum PostgresScalarKind: Sendable, Hashable {
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

    /// The logical column type of a value of this kind.
    var columnType: ColumnType {
        switch self {
        case .integer: return .integer
        case .double: return .double
        case .decimal: return .decimal
        case .bool: return .bool
        case .text: return .text
        case .date: return .date
        case .timestamp: return .timestamp
        case .time: return .time
        case .json: return .json
        case .bytes: return .bytes
        }
    }
}

/// The decoding rule of one result column: a scalar kind, or an array of that kind.
///
/// Every type OID maps to a rule: OIDs Spout does not know (enums, domains over unknown types,
/// `interval`, geometric types, ...) are read as text.
struct PostgresColumnDecoder: Sendable, Hashable {
    var element: PostgresScalarKind
    var isArray: Bool

    init(element: PostgresScalarKind, isArray: Bool) {
        self.element = element
        self.isArray = isArray
    }

    /// The rule for a column of type `oid`.
    init(oid: Oid) {
        if let scalar = PostgresTypeOID.scalarKinds[oid] {
            self.init(element: scalar, isArray: false)
        } else if let element = PostgresTypeOID.arrayElementKinds[oid] {
            self.init(element: element, isArray: true)
        } else {
            self.init(element: .text, isArray: false)
        }
    }

    var columnType: ColumnType {
        self.isArray ? .array(self.element.columnType) : self.element.columnType
    }

    /// The bytes of field (`row`, `column`) of `result` as libpq holds them (its text, or its
    /// binary form in a binary result); nil for NULL.
    @inline(__always)
    static func text(in result: OpaquePointer, row: Int32, column: Int32) -> UnsafeBufferPointer<UInt8>? {
        // libpq gives NULL a length of 0, so only an empty value needs asking whether it is NULL:
        // one call fewer per value on the streaming path.
        let length = PQgetlength(result, row, column)
        guard length > 0 || PQgetisnull(result, row, column) == 0, let start = PQgetvalue(result, row, column) else { return nil }
        return UnsafeBufferPointer(start: UnsafeRawPointer(start).assumingMemoryBound(to: UInt8.self), count: Int(length))
    }

    /// Decodes field (`row`, `column`) of `result`. NULL becomes `.null`.
    @inline(__always)
    func value(in result: OpaquePointer, row: Int32, column: Int32) -> SQLValue {
        guard let bytes = Self.text(in: result, row: row, column: column) else { return .null }
        return self.value(of: bytes)
    }

    /// Decodes a field's text.
    @inline(__always)
    private func value(of bytes: UnsafeBufferPointer<UInt8>) -> SQLValue {
        if self.isArray {
            return PostgresArrayLiteral.parse(bytes, element: self.element)
        }
        return PostgresTextDecoder.decode(bytes, as: self.element)
    }

    /// Writes field (`row`, `column`) of `result` as JSON: exactly the bytes
    /// `JSONText.writeValue(value(in:row:column:), dateFormat:to:)` writes, straight from
    /// libpq's text where the type allows (integers, booleans, text, dates), without a
    /// ``SpoutCore/SQLValue`` (nor, for ASCII text, a `String`); through the value for the
    /// others (arrays, timestamps, numbers with a fraction, ...) and for text that does not
    /// parse as its type.
    @inline(__always)
    func writeJSON(in result: OpaquePointer, row: Int32, column: Int32, dateFormat: DateFormat, to out: inout ChunkedOutput) {
        guard let bytes = Self.text(in: result, row: row, column: column) else {
            out.append("null")
            return
        }
        guard !self.isArray else {
            JSONText.writeValue(self.value(of: bytes), dateFormat: dateFormat, to: &out)
            return
        }
        switch self.element {
        case .integer:
            // As PostgreSQL wrote it: the same bytes as the parsed value's, without the round trip.
            if PostgresTextDecoder.isCanonicalInteger(bytes) {
                out.append(contentsOf: bytes)
                return
            }
            if let value = PostgresTextDecoder.parseInteger(bytes) {
                JSONText.writeInteger(value, to: &out)
                return
            }
        case .bool where bytes.count == 1 && bytes[0] == UInt8(ascii: "t"):
            out.append("true")
            return
        case .bool where bytes.count == 1 && bytes[0] == UInt8(ascii: "f"):
            out.append("false")
            return
        case .text:
            JSONText.writeString(unvalidatedUTF8: bytes, to: &out)
            return
        case .date:
            if let days = CivilTime.parseDate(bytes) {
                JSONText.writeDate(days: days, dateFormat: dateFormat, to: &out)
                return
            }
        default:
            break
        }
        JSONText.writeValue(self.value(of: bytes), dateFormat: dateFormat, to: &out)
    }
}

/// The built-in type OIDs of `pg_type` that Spout maps (stable across PostgreSQL versions).
enum PostgresTypeOID {
    static let bool: Oid = 16
    static let bytea: Oid = 17
    static let char: Oid = 18
    static let name: Oid = 19
    static let int8: Oid = 20
    static let int2: Oid = 21
    static let int4: Oid = 23
    static let text: Oid = 25
    static let oid: Oid = 26
    static let json: Oid = 114
    static let float4: Oid = 700
    static let float8: Oid = 701
    static let unknown: Oid = 705
    static let bpchar: Oid = 1042
    static let varchar: Oid = 1043
    static let date: Oid = 1082
    static let time: Oid = 1083
    static let timestamp: Oid = 1114
    static let timestamptz: Oid = 1184
    static let timetz: Oid = 1266
    static let numeric: Oid = 1700
    static let uuid: Oid = 2950
    static let jsonb: Oid = 3802

    /// Scalar type OID → the type's SQL name, for casts of batched key arrays.
    static let names: [Oid: String] = [
        int2: "int2", int4: "int4", int8: "int8", oid: "oid", float4: "float4", float8: "float8",
        numeric: "numeric", bool: "bool", text: "text", varchar: "varchar", bpchar: "bpchar", name: "name",
        uuid: "uuid", date: "date", timestamp: "timestamp", timestamptz: "timestamptz", time: "time",
        timetz: "timetz", json: "json", jsonb: "jsonb", bytea: "bytea",
    ]

    /// Scalar type OID → kind.
    static let scalarKinds: [Oid: PostgresScalarKind] = [
        int2: .integer, int4: .integer, int8: .integer, oid: .integer,
        float4: .double, float8: .double,
        numeric: .decimal,
        bool: .bool,
        text: .text, varchar: .text, bpchar: .text, name: .text, char: .text, uuid: .text, unknown: .text,
        date: .date,
        timestamp: .timestamp, timestamptz: .timestamp,
        time: .time, timetz: .time,
        json: .json, jsonb: .json,
        bytea: .bytes,
    ]

    /// Array type OID (`pg_type.typarray` of the scalars above) → element kind.
    static let arrayElementKinds: [Oid: PostgresScalarKind] = [
        1005: .integer, 1007: .integer, 1016: .integer, 1028: .integer,  // _int2 _int4 _int8 _oid
        1021: .double, 1022: .double,  // _float4 _float8
        1231: .decimal,  // _numeric
        1000: .bool,  // _bool
        1009: .text, 1015: .text, 1014: .text, 1003: .text, 1002: .text, 2951: .text,  // _text _varchar _bpchar _name _char _uuid
        1182: .date,  // _date
        1115: .timestamp, 1185: .timestamp,  // _timestamp _timestamptz
        1183: .time, 1270: .time,  // _time _timetz
        199: .json, 3807: .json,  // _json _jsonb
        1001: .bytes,  // _bytea
    ]
}
