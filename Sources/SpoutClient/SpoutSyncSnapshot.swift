import Foundation

/// What a ``SpoutSyncStore`` holds at one moment: every row of the caller's result as of the
/// last sync that reached the server.
public struct SpoutSyncSnapshot: Sendable {
    /// The rows, in the order they entered the store: the first sync's in the server's order,
    /// rows new since then after them; a changed row keeps its place.
    public var rows: [SpoutSyncedRow]
    /// When the store last applied a sync read; nil before the first (``rows`` is empty then).
    public var syncedAt: Date?
    /// Increases with every sync applied to the store's file (by any instance).
    let generation: Int64
    let dateFormat: SpoutDateFormat

    /// The rows decoded as `type`, dates as the client is configured. Throws
    /// ``SpoutClientError/decoding(row:_:)`` naming the first row that does not decode.
    public func decode<Row: Decodable>(_ type: Row.Type) throws -> [Row] {
        let decoder = self.dateFormat.makeDecoder()
        return try self.rows.enumerated().map { index, row in
            do {
                return try decoder.decode(type, from: row.json)
            } catch {
                throw SpoutClientError.decoding(row: index, String(describing: error))
            }
        }
    }
}

/// One row of a ``SpoutSyncStore``.
public struct SpoutSyncedRow: Sendable, Hashable {
    /// The row's key: the key columns' values as a compact JSON array (`["Rex"]`).
    public var key: String
    /// The row's JSON object, its bytes exactly as the server sent them.
    public var json: Data
}

/// What one ``SpoutSyncStore/sync()`` changed in the store.
public struct SpoutSyncChanges: Sendable, Equatable {
    /// The store was filled from the whole result (`since=0`): its first sync, or a sync
    /// again from the beginning after the server no longer kept the changes since its cursor
    /// (`410 Gone`) or refused the cursor (`400` naming `since`). Rows not in the result left.
    public var isWhole: Bool
    /// The keys of the rows stored or replaced.
    public var upserted: [String]
    /// The keys the server said to forget (tombstones); empty for a whole result.
    public var deleted: [String]
}
