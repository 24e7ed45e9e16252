/// Which form of a sync read's delta (``SyncDeltaSQL``) reads the changes since a cursor: a
/// search of the statement per changed key (``SyncDeltaSQL/changes``), or the statement read
/// once and its rows matched to the changed keys (``SyncDeltaSQL/scanned``).
///
/// Contract: the statement is read once only when at least ``minimumChanges`` changes are to
/// be read and the database estimates the statement's rows at no more than ``rowsPerChange``
/// times the changes. A search costs a few index and table pages per key, a row of a scan a
/// fraction of one, so then the scan is the cheaper form; a scan of a statement much larger
/// than the changes is not, and a delta's cost must follow the changes, not the result.
/// Without an estimate, each changed key is searched.
///
/// The changes are counted before the choice, never further than the choice needs
/// (``changesToScan(estimatedRows:)``): a count reads the log's rows it counts.
public enum SyncDeltaChoice {
    /// Fewer changes than this are always searched key by key: the statement's estimate would
    /// cost a round trip of its own for a delta that takes about as long.
    public static let minimumChanges = 1_000
    /// The most rows of the statement per change for which it is read once.
    public static let rowsPerChange = 3

    /// How many changes make a statement of `estimatedRows` rows worth reading once.
    public static func changesToScan(estimatedRows: Int) -> Int {
        let perChange = estimatedRows / self.rowsPerChange + (estimatedRows % self.rowsPerChange == 0 ? 0 : 1)
        return max(self.minimumChanges, perChange)
    }

    /// Whether `changes` changes (counted up to ``changesToScan(estimatedRows:)`` or further)
    /// are read by reading a statement of `estimatedRows` rows once.
    public static func scans(changes: Int, estimatedRows: Int?) -> Bool {
        guard let estimatedRows, estimatedRows >= 0 else { return false }
        return changes >= self.changesToScan(estimatedRows: estimatedRows)
    }
}
