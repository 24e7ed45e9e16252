/// How one row becomes a JSON object: keys pre-escaped once per stream, dotted labels
/// (`department.name`) grouped into nested objects, attachments after the columns.
///
/// A dotted prefix opens its nested object where it first appears; later columns with the
/// same prefix join that object, so `a, d.x, b, d.y` gives `{"a":..,"d":{"x":..,"y":..},"b":..}`.
struct ObjectPlan: Sendable {
    enum Member: Sendable {
        case column(key: [UInt8], index: Int)
        case object(key: [UInt8], ObjectPlan)
        case attachment(key: [UInt8], index: Int)
    }

    var members: [Member]
    /// For a plan of plain columns in order (no dotted label, no attachment), what a compact
    /// object writes around each value, so the object is written without walking ``members``.
    /// Nil otherwise.
    private(set) var compactLayout: CompactObjectLayout?

    /// Plans made so far, by column list and attachment keys: a request's results have the
    /// columns the previous request's had, and making a plan (an escaped key per column) cost
    /// a tenth of a detail request's allocations.
    private static let memo = BoundedCache<ColumnListKey, ObjectPlan>(capacity: 512)

    /// The plan for rows with `columns` and then `attachmentKeys`: made once per distinct
    /// pair, then shared.
    static func of(columns: [Column], attachmentKeys: [String]) -> ObjectPlan {
        Self.memo.value(for: ColumnListKey(columns, attachmentKeys: attachmentKeys)) {
            ObjectPlan(labels: columns.map(\.label), attachmentKeys: attachmentKeys)
        }
    }

    init(labels: [String], attachmentKeys: [String]) {
        if !labels.contains(where: { $0.utf8.contains(UInt8(ascii: ".")) }) {
            // No dotted label (the common case): one member per column, in order.
            self.members = labels.enumerated().map { .column(key: Self.encodedKey($1), index: $0) }
        } else {
            var root = Builder()
            for (index, label) in labels.enumerated() {
                root.insert(path: label.split(separator: ".", omittingEmptySubsequences: false).map(String.init), index: index)
            }
            self.members = root.plan().members
        }
        self.members.reserveCapacity(self.members.count + attachmentKeys.count)
        for (index, key) in attachmentKeys.enumerated() {
            self.members.append(.attachment(key: Self.encodedKey(key), index: index))
        }
        self.compactLayout = Self.compactLayout(of: self.members)
    }

    private init(members: [Member]) {
        self.members = members
    }

    /// ``compactLayout`` for `members`; nil unless they are plain columns in order.
    private static func compactLayout(of members: [Member]) -> CompactObjectLayout? {
        var keys: [[UInt8]] = []
        keys.reserveCapacity(members.count)
        for (position, member) in members.enumerated() {
            guard case .column(let key, let index) = member, index == position else { return nil }
            keys.append(key)
        }
        return CompactObjectLayout(encodedKeys: keys)
    }

    /// `"key":` with the key escaped as a JSON string.
    static func encodedKey(_ key: String) -> [UInt8] {
        let utf8 = key.utf8
        if !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            // Nothing to escape: the bytes in quotes.
            var bytes: [UInt8] = []
            bytes.reserveCapacity(utf8.count + 2)
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: utf8)
            bytes.append(UInt8(ascii: "\""))
            return bytes
        }
        let sink = CollectingSink()
        var out = ChunkedOutput(sink: sink)
        JSONText.writeString(key, to: &out)
        try? out.finish()
        return sink.bytes
    }

    /// Ordered tree of label paths.
    private struct Builder {
        var entries: [(name: String, index: Int?, child: Builder?)] = []

        mutating func insert(path: [String], index: Int) {
            if path.count == 1 || path.contains(where: \.isEmpty) {
                self.entries.append((path.joined(separator: "."), index, nil))
                return
            }
            let head = path[0]
            if let position = self.entries.firstIndex(where: { $0.name == head && $0.child != nil }) {
                self.entries[position].child!.insert(path: Array(path.dropFirst()), index: index)
            } else {
                var child = Builder()
                child.insert(path: Array(path.dropFirst()), index: index)
                self.entries.append((head, nil, child))
            }
        }

        func plan() -> ObjectPlan {
            ObjectPlan(members: self.entries.map { entry in
                if let child = entry.child {
                    return .object(key: ObjectPlan.encodedKey(entry.name), child.plan())
                }
                return .column(key: ObjectPlan.encodedKey(entry.name), index: entry.index!)
            })
        }
    }
}
