import SpoutCore

/// Statement parameters rendered once into NUL-terminated text, ready for libpq's
/// `paramValues` (text format, type OID 0: the server infers each type from the statement).
struct PostgresTextParameters {
    private var storage: [UInt8] = []
    /// Start of each parameter in `storage`, or nil for SQL NULL.
    private var offsets: [Int?] = []

    /// Renders `values` (see ``SQLValue/appendPostgresText(to:)``).
    /// Throws ``DatabaseError/Code/invalidValue`` when a value contains a NUL character,
    /// which PostgreSQL text cannot hold (and which would silently truncate the parameter).
    init(_ values: [SQLValue]) throws {
        self.offsets.reserveCapacity(values.count)
        for (position, value) in values.enumerated() {
            if value.isNull {
                self.offsets.append(nil)
                continue
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

    /// Calls `body` with the parameter count and the `const char * const *` libpq expects.
    /// The pointers are valid only inside `body`.
    func withUnsafeCValues<Result>(
        _ body: (Int32, UnsafePointer<UnsafePointer<CChar>?>?) throws -> Result
    ) rethrows -> Result {
        try self.storage.withUnsafeBytes { storage in
            let pointers: [UnsafePointer<CChar>?] = self.offsets.map { offset in
                guard let offset, let base = storage.baseAddress else { return nil }
                return (base + offset).assumingMemoryBound(to: CChar.self)
            }
            return try pointers.withUnsafeBufferPointer { values in
                try body(Int32(values.count), values.baseAddress)
            }
        }
    }
}
