/// The rows of a delta's statement (``SyncDeltaSQL``) as the endpoint's statement would
/// answer them: its columns without the touched keys' that follow them, and only the rows the
/// statement has, each key once (where keys repeat, a row whose touched key is the row's
/// before it is skipped). Each row without one (a key to forget) is handed to `forget` with
/// its key's values, as the log holds them, when ``next()`` passes it; the statement puts those
/// first, so every key to forget is handed over before the first row is read.
///
/// A row's presence is asked of the cursor (``RowCursor/isNull(at:)``), and the touched key is
/// read only where it is needed: for a key to forget, and, where keys repeat, once per row.
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
    private let keysRepeat: Bool
    private let forget: ([SQLValue]) throws -> Void
    /// Where keys repeat: the touched key of the row before, to skip the same key's next rows;
    /// empty before the first row.
    private var previousKey: [SQLValue] = []

    /// - Parameters:
    ///   - cursor: the delta statement's cursor.
    ///   - key: the key's labels among the statement's columns.
    ///   - keysRepeat: whether a key may come in adjacent rows (``SyncDeltaSQL/keysRepeat``).
    ///   - forget: takes the key of each row to forget, in order.
    public init(_ cursor: any RowCursor, key: [String], keysRepeat: Bool, forget: @escaping ([SQLValue]) throws -> Void) throws {
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
        self.keysRepeat = keysRepeat
        self.forget = forget
    }

    public func next() throws -> Bool {
        while try self.inner.next() {
            if self.keysRepeat, !self.keepsNewKey() { continue }
            guard self.inner.isNull(at: self.presence) else { return true }
            try self.forget(self.keysRepeat ? self.previousKey : self.touchedKey())
        }
        return false
    }

    /// The current row's touched key.
    private func touchedKey() -> [SQLValue] {
        let start = self.columns.count
        return (0..<self.keyWidth).map { self.inner.value(at: start + $0) }
    }

    /// Whether the current row's touched key differs from the row before's; if so, it is kept
    /// as the previous key, its differing values written over the last one's in place (no
    /// array per row). Each value is read once.
    private func keepsNewKey() -> Bool {
        let start = self.columns.count
        var isNew = self.previousKey.count != self.keyWidth
        if isNew { self.previousKey = Array(repeating: .null, count: self.keyWidth) }
        for index in 0..<self.keyWidth {
            let value = self.inner.value(at: start + index)
            guard value != self.previousKey[index] else { continue }
            isNew = true
            self.previousKey[index] = value
        }
        return isNew
    }

    public func isNull(at index: Int) -> Bool {
        self.inner.isNull(at: index)
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
