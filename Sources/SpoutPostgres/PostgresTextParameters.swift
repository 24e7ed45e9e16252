import SpoutCore

/// Statement parameters rendered once into NUL-terminated text, ready for libpq's
/// `paramValues` (text format). Their type OID is 0, so the server infers each type from the
/// statement, except for bytes: those are declared `bytea` (OID 17), since their text (`\x`
/// and hex digits) would otherwise be read as text wherever the statement leaves the type open
/// (`length(:file)`, `md5(:file)`), and SQLite binds them as the blob they are.
struct PostgresTextParameters {
    private var storage: [UInt8] = []
    /// Start of each parameter in `storage`, or nil for SQL NULL.
    private var offsets: [Int?] = []
    /// Each parameter's type OID when any is declared (bytes); nil: all are inferred.
    private var types: [UInt32]?

    /// `bytea`'s OID.
    static let byteaOID: UInt32 = 17

    /// Renders `values` (see ``SQLValue/appendPostgresText(to:)``).
    /// Throws ``DatabaseError/Code/invalidValue`` when a value contains a NUL character,
    /// which PostgreSQL text cannot hold (and which would silently truncate the parameter).
    init(_ values: [SQLValue]) throws {
        self.offsets.reserveCapacity(values.count)
        // Most values' text is short: one allocation for all of them, usually.
        self.storage.reserveCapacity(values.count * 24)
        for (position, value) in values.enumerated() {
            if value.isNull {
                self.offsets.append(nil)
                continue
            }
            if case .bytes = value {
                if self.types == nil { self.types = [UInt32](repeating: 0, count: values.count) }
                self.types?[position] = Self.byteaOID
            }
            let start = self.storage.count
            value.appendPostgresText(to: &self.storage)
            if self.storage[start...].contains(0) {
                throw DatabaseError(.invalidValue, message: "parameter $\(position + 1) contains a NUL character")
            }
            self.storage.append(0)
            self.offsets.append(start)
        }
    }

    var count: Int { self.offsets.count }

    /// The bytes of the rendered values, their terminators included.
    var byteCount: Int { self.storage.count }

    /// What a statement prepared for these parameters is prepared for: empty when every type
    /// is inferred, else the declared OIDs. A statement text is prepared once per signature, as
    /// a statement prepared with an inferred type cannot take a declared one.
    var typeSignature: String {
        self.types.map { $0.map(String.init).joined(separator: ",") } ?? ""
    }

    /// Calls `body` with the parameter count, the `const char * const *` values and the
    /// `const Oid *` types (nil when all are inferred) libpq expects. The pointers are valid
    /// only inside `body`.
    func withUnsafeCValues<Result>(
        _ body: (Int32, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<UInt32>?) throws -> Result
    ) rethrows -> Result {
        try self.storage.withUnsafeBytes { storage in
            try withUnsafeTemporaryAllocation(of: UnsafePointer<CChar>?.self, capacity: self.offsets.count) { pointers in
                for (position, offset) in self.offsets.enumerated() {
                    pointers.initializeElement(
                        at: position,
                        to: offset.flatMap { offset in storage.baseAddress.map { ($0 + offset).assumingMemoryBound(to: CChar.self) } })
                }
                let values = UnsafePointer(pointers.baseAddress)
                guard let types = self.types else { return try body(Int32(pointers.count), values, nil) }
                return try types.withUnsafeBufferPointer { try body(Int32(pointers.count), values, $0.baseAddress) }
            }
        }
    }

    /// Calls `body` with the type OIDs to prepare a statement with (nil: all inferred).
    func withUnsafeTypes<Result>(_ body: (Int32, UnsafePointer<UInt32>?) throws -> Result) rethrows -> Result {
        guard let types = self.types else { return try body(0, nil) }
        return try types.withUnsafeBufferPointer { try body(Int32($0.count), $0.baseAddress) }
    }
}
