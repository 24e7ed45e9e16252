/// A result's column list (and, for an object plan, its attachment keys) as a dictionary key
/// for the memos of work that depends only on it: ``ObjectPlan/of(columns:attachmentKeys:)``
/// and ``AttachmentExecutor/labelIndex(_:)``, looked up for every result of every request.
///
/// Hashes by each label's length and type rather than its characters, so a lookup costs no
/// string hashing; equality still compares everything (labels in a process are few and short,
/// and an array equal to itself compares by identity), so lists that hash alike stay apart.
struct ColumnListKey: Hashable, Sendable {
    let columns: [Column]
    let attachmentKeys: [String]

    init(_ columns: [Column], attachmentKeys: [String] = []) {
        self.columns = columns
        self.attachmentKeys = attachmentKeys
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(self.columns.count)
        // Read in place: iterating the array would copy (retain) each column.
        self.columns.withUnsafeBufferPointer { columns in
            for index in 0..<columns.count {
                hasher.combine(columns[index].label.utf8.count)
                hasher.combine(columns[index].type)
            }
        }
        hasher.combine(self.attachmentKeys.count)
    }

    static func == (a: ColumnListKey, b: ColumnListKey) -> Bool {
        Column.sameList(a.columns, b.columns) && a.attachmentKeys == b.attachmentKeys
    }
}
