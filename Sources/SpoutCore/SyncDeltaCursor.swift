/// The rows of a delta's statement (``SyncDeltaSQL``) as the endpoint's statement would
/// answer them: its columns without the touched keys' that follow them, and only the rows the
/// statement has, each key once (a row whose touched key is the row's before it is skipped).
/// Each row without one (a key to forget) is handed to `forget` with its key's values, as the
/// log holds them, when ``next()`` passes it; the statement puts those first, so every key to
/// forget is handed over before the first row is read.
///
/// Forwards the underlying cursor's JSON writing when it has one (the key's columns follow
/// the statement's, so a layout of the statement's columns reads the same values).
public final class SyncDeltaCursor: JSONWritingCursor {
    public let columns: [Column]
    private let inner: any RowCursor
    private let writer: (any JSONWritingCursor)?
    /// The position of the statement's first key column, NULL in a row to forget.
    private let presence: Int
    private let keyWidth: Int
    private let forget: ([SQLValue]) throws -> Void
    /// The touched key of the row before, to skip the same key's next rows.
    private var previousKey: [SQLValue] = []

    /// - Parameters:
    ///   - cursor: the delta statement's cursor.
    ///   - key: the key's labels among the statement's columns.
    ///   - forget: takes the key of each row to forget, in order.
    public init(_ cursor: any RowCursor, key: [String], forget: @escaping ([SQLValue]) throws -> Void) throws {
        let statementWidth = cursor.columns.count - key.count
        let statementColumns = Array(cursor.columns.prefix(max(statementWidth, 0)))
        guard statementWidth > 0, let presence = statementColumns.firstIndex(where: { $0.label == key[0] }) else {
            throw DatabaseError(.unsupported, message: "a sync delta's result has no column labelled \(key[0])")
        }
        self.columns = statementColumns
        self.inner = cursor
        self.writer = cursor as? any JSONWritingCursor
        self.presence = presence
        self.keyWidth = key.count
        self.forget = forget
    }

    public func next() throws -> Bool {
        while try self.inner.next() {
            guard self.keepsNewKey() else { continue }
            guard case .null = self.inner.value(at: self.presence) else { return true }
            try self.forget(self.previousKey)
        }
        return false
    }

    /// Whether the current row's touched key differs from the row before's; if so, it is kept
    /// as the previous key, written over the last one in place (no array per row).
    private func keepsNewKey() -> Bool {
        let start = self.columns.count
        if self.previousKey.count == self.keyWidth,
            (0..<self.keyWidth).allSatisfy({ self.inner.value(at: start + $0) == self.previousKey[$0] })
        {
            return false
        }
        if self.previousKey.count != self.keyWidth { self.previousKey = Array(repeating: .null, count: self.keyWidth) }
        for index in 0..<self.keyWidth { self.previousKey[index] = self.inner.value(at: start + index) }
        return true
    }

    public func value(at index: Int) -> SQLValue {
        self.inner.value(at: index)
    }

    public func close() {
        self.inner.close()
    }

    public func writeJSON(at index: Int, dateFormat: DateFormat, to out: inout ChunkedOutput) {
        if let writer = self.writer {
            writer.writeJSON(at: index, dateFormat: dateFormat, to: &out)
        } else {
            JSONText.writeValue(self.inner.value(at: index), dateFormat: dateFormat, to: &out)
        }
    }

    public func writeJSONObject(_ layout: CompactObjectLayout, dateFormat: DateFormat, to out: inout ChunkedOutput) {
        if let writer = self.writer {
            writer.writeJSONObject(layout, dateFormat: dateFormat, to: &out)
        } else {
            layout.write(to: &out) { column, out in JSONText.writeValue(self.inner.value(at: column), dateFormat: dateFormat, to: &out) }
        }
    }
}
