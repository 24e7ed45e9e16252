import CLibPQ
import SpoutCore

/// A column type whose binary form (`typsend`) a server cursor reads instead of its text, and
/// how: integers, `float8`, booleans, dates, timestamps and the text types, the types whose
/// binary form is simpler than their text. (`float4` is not one: its text is the shortest
/// decimal of a `float4`, which reads back as another `Double` than the `Float` widened.) A
/// stream's batches after the first are fetched in binary when every column is one of them
/// (``PostgresServerCursor``): PostgreSQL then skips formatting each value
/// (`date_out` is dearer than `date_send`), libpq parses fewer bytes, and a date needs no
/// parsing at all.
///
/// Contract: for every value, ``value(_:)`` is the value ``PostgresTextDecoder`` makes of the
/// same value's text, and ``writeJSON(_:dateFormat:to:)`` writes the bytes
/// `JSONText.writeValue(value(_:), ...)` writes; `PostgresJSONWritingTests` compares both
/// forms of every kind. A value whose length is not its type's (which PostgreSQL never sends)
/// becomes `null`.
enum PostgresBinaryColumn: Sendable, Hashable {
    case int2
    case int4
    case int8
    case float8
    case bool
    case date
    /// `timestamp` and `timestamptz`: microseconds since 2000-01-01 (UTC).
    case timestamp
    /// `text`, `varchar`, `bpchar` and `name`: their binary form is their text.
    case text

    /// The binary form read for a column of type `oid`; nil for the types read as text.
    init?(oid: Oid) {
        switch oid {
        case PostgresTypeOID.int2: self = .int2
        case PostgresTypeOID.int4: self = .int4
        case PostgresTypeOID.int8: self = .int8
        case PostgresTypeOID.float8: self = .float8
        case PostgresTypeOID.bool: self = .bool
        case PostgresTypeOID.date: self = .date
        case PostgresTypeOID.timestamp, PostgresTypeOID.timestamptz: self = .timestamp
        case PostgresTypeOID.text, PostgresTypeOID.varchar, PostgresTypeOID.bpchar, PostgresTypeOID.name: self = .text
        default: return nil
        }
    }

    /// The binary form of every column of `result`, or nil when one is read as text (or there
    /// are no columns).
    static func columns(of result: OpaquePointer) -> [PostgresBinaryColumn]? {
        let count = PQnfields(result)
        guard count > 0 else { return nil }
        var columns: [PostgresBinaryColumn] = []
        columns.reserveCapacity(Int(count))
        for column in 0..<count {
            guard let binary = PostgresBinaryColumn(oid: PQftype(result, column)) else { return nil }
            columns.append(binary)
        }
        return columns
    }

    /// PostgreSQL's dates and timestamps count from 2000-01-01; Spout's from 1970-01-01.
    private static let daysFrom1970To2000: Int64 = 10_957
    private static let microsecondsFrom1970To2000: Int64 = 946_684_800_000_000

    /// The value of a binary field (not NULL).
    func value(_ bytes: UnsafeBufferPointer<UInt8>) -> SQLValue {
        switch self {
        case .int2, .int4, .int8:
            return self.integer(bytes).map { .integer($0) } ?? .null
        case .float8:
            return self.double(bytes).map { .double($0) } ?? .null
        case .timestamp:
            return self.microseconds(bytes).map { .timestamp(microseconds: $0) } ?? .null
        case .bool:
            guard bytes.count == 1 else { return .null }
            return .bool(bytes[0] != 0)
        case .date:
            return self.days(bytes).map { .date(days: $0) } ?? .null
        case .text:
            return .text(PostgresTextDecoder.string(bytes))
        }
    }

    /// Writes a binary field (not NULL) as JSON.
    @inline(__always)
    func writeJSON(_ bytes: UnsafeBufferPointer<UInt8>, dateFormat: DateFormat, to out: inout ChunkedOutput) {
        switch self {
        case .int2, .int4, .int8:
            guard let value = self.integer(bytes) else { return out.append("null") }
            JSONText.writeInteger(value, to: &out)
        case .float8:
            guard let value = self.double(bytes) else { return out.append("null") }
            JSONText.writeDouble(value, to: &out)
        case .timestamp:
            JSONText.writeValue(self.value(bytes), dateFormat: dateFormat, to: &out)
        case .bool:
            guard bytes.count == 1 else { return out.append("null") }
            out.append(bytes[0] != 0 ? "true" : "false")
        case .date:
            guard let days = self.days(bytes) else { return out.append("null") }
            JSONText.writeDate(days: days, dateFormat: dateFormat, to: &out)
        case .text:
            JSONText.writeString(unvalidatedUTF8: bytes, to: &out)
        }
    }

    /// A big-endian integer of the column's width.
    @inline(__always)
    private func integer(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        let raw = UnsafeRawBufferPointer(bytes)
        switch self {
        case .int2 where bytes.count == 2: return Int64(Int16(bigEndian: raw.loadUnaligned(as: Int16.self)))
        case .int4 where bytes.count == 4: return Int64(Int32(bigEndian: raw.loadUnaligned(as: Int32.self)))
        case .int8 where bytes.count == 8: return Int64(bigEndian: raw.loadUnaligned(as: Int64.self))
        default: return nil
        }
    }

    /// An IEEE 754 double, big-endian.
    @inline(__always)
    private func double(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        guard bytes.count == 8 else { return nil }
        return Double(bitPattern: UInt64(bigEndian: UnsafeRawBufferPointer(bytes).loadUnaligned(as: UInt64.self)))
    }

    /// Microseconds since 1970-01-01 of a binary timestamp; nil for `infinity` and
    /// `-infinity` (as the text decoder maps them) and for a wrong length.
    @inline(__always)
    private func microseconds(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard bytes.count == 8 else { return nil }
        let micros = Int64(bigEndian: UnsafeRawBufferPointer(bytes).loadUnaligned(as: Int64.self))
        guard micros != .max, micros != .min else { return nil }
        let (since1970, overflow) = micros.addingReportingOverflow(Self.microsecondsFrom1970To2000)
        return overflow ? nil : since1970
    }

    /// Days since 1970-01-01 of a binary date; nil for `infinity` and `-infinity` (as the text
    /// decoder maps them) and for a wrong length.
    @inline(__always)
    private func days(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard bytes.count == 4 else { return nil }
        let days = Int32(bigEndian: UnsafeRawBufferPointer(bytes).loadUnaligned(as: Int32.self))
        guard days != .max, days != .min else { return nil }
        return Int64(days) + Self.daysFrom1970To2000
    }
}
