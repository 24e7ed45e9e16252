/// The statements of a sync read and of live notices, made from an endpoint's statement: its
/// rows whose key is one of a batch of keys, those keys alone, and the pieces the drivers'
/// deltas (``SyncDeltaSQL``) are made of. The statement is wrapped, not rewritten
/// (`SELECT * FROM (<statement>) AS spout_sync WHERE <key matches>`), so its filters, joins,
/// claims and labels stay as they are; both databases push the key condition down into it,
/// so an index on the key serves it and the cost follows the keys, not the table.
///
/// A key of one column is matched against one list parameter (``listParameter``, the
/// dialect's ``SQLDialect/membership(_:inList:)``), so a batch of any size is one statement
/// text. A key of several columns is bound as one parameter per value (``keyParameter(_:_:)``),
/// whose types the database infers from the key columns; its batches are padded to a power of
/// two by repeating their last key, so an endpoint's statements prepare a handful of texts,
/// not one per batch size.
public enum SyncQuery {
    /// The list parameter holding the batch's keys when the key has one column.
    public static let listParameter = "spout_sync_keys"

    /// The parameter of column `column` of the batch's key number `row`, for a key of several
    /// columns.
    public static func keyParameter(_ row: Int, _ column: Int) -> String {
        "spout_sync_\(row)_\(column)"
    }

    /// The parameter of a delta (``SyncDeltaSQL``) holding the cursor's position.
    public static let sinceParameter = "spout_sync_since"
    /// The parameter of a delta holding the tracked tables' log names.
    public static let tablesParameter = "spout_sync_tables"

    /// The label of the changed keys' column `index` in a delta's statements.
    public static func changedKeyColumn(_ index: Int) -> String {
        "spout_key_\(index)"
    }

    /// `sql` as a delta embeds it: in parentheses, as `spout_sync`, without the final
    /// top-level `ORDER BY` when dropping it changes no row it answers (``unordered(_:)``): a
    /// delta's rows keep no order, and a statement searched once per changed key would sort
    /// each search's row (PostgreSQL cannot take the key's index order for an `ORDER BY` with
    /// another collation, as the shipped statements' `COLLATE "C"`).
    public static func wrapped(_ sql: String) -> String {
        "(\n\(self.unordered(sql))\n) AS spout_sync"
    }

    /// `sql` without its final top-level `ORDER BY`, unless the statement has a top-level
    /// `LIMIT`, `OFFSET` or `FETCH` (which keep the rows first in that order) or a `DISTINCT
    /// ON` (which keeps the first row of each group in it), or cannot be read; then `sql` as
    /// it is, without trailing semicolons.
    static func unordered(_ sql: String) -> String {
        guard !self.hasDistinctOn(sql), let body = try? KeysetQuery.withoutFinalOrder(sql) else { return self.trimmed(sql) }
        return body
    }

    /// Whether `sql` has `DISTINCT ON` anywhere, or cannot be read.
    private static func hasDistinctOn(_ sql: String) -> Bool {
        var lexer = SQLLexer(sql)
        let bytes = lexer.bytes
        var previous: SQLToken?
        do {
            while let token = try lexer.next() {
                if token.kind == .whitespace || token.kind == .comment { continue }
                if let previous, previous.isWord("DISTINCT", in: bytes), token.isWord("ON", in: bytes) { return true }
                previous = token
            }
        } catch {
            return true
        }
        return false
    }

    /// The condition that a row of `spout_sync` (``wrapped(_:)``) has the key of the row of
    /// `spout_changed` (columns ``changedKeyColumn(_:)``).
    public static func keyMatch(_ key: [String]) -> String {
        key.enumerated().map { index, label in "\(self.quoted(label)) = spout_changed.\(self.changedKeyColumn(index))" }
            .joined(separator: " AND ")
    }

    /// The `ORDER BY` of a delta (``SyncDeltaSQL``) that puts the keys to forget first: the
    /// rows where `spout_sync`'s first key column is NULL (a row of the statement matched
    /// by key has its key); with `adjacentKeys`, then by the touched key, so the rows of a key
    /// touched more than once are adjacent.
    public static func forgottenFirst(_ key: [String], adjacentKeys: Bool = false) -> String {
        let order = "ORDER BY \(self.quoted(key[0])) IS NULL DESC"
        guard adjacentKeys else { return order }
        return order + key.indices.map { ", spout_changed." + self.changedKeyColumn($0) }.joined()
    }

    /// The `key` columns of the rows of `sql` whose key is one of `count` keys.
    public static func keys(of sql: String, key: [String], count: Int, dialect: SQLDialect) -> String {
        let columns = key.map(self.quoted).joined(separator: ", ")
        return "SELECT \(columns) FROM (\n\(self.trimmed(sql))\n) AS spout_sync WHERE \(self.condition(key: key, count: count, dialect: dialect))"
    }

    /// The `key` columns of at most `limit` rows of `sql`, in no particular order (`0`: none,
    /// for their types).
    public static func keys(of sql: String, key: [String], limit: Int) -> String {
        let columns = key.map(self.quoted).joined(separator: ", ")
        return "SELECT \(columns) FROM (\n\(self.trimmed(sql))\n) AS spout_sync LIMIT \(limit)"
    }

    /// `arguments` (the statement's) and the values of `batch`'s keys: the list parameter for
    /// keys of one column, else one parameter per value (``keyParameter(_:_:)``).
    public static func arguments(_ arguments: [String: SQLValue], keys batch: [[SQLValue]]) -> [String: SQLValue] {
        var arguments = arguments
        if batch.allSatisfy({ $0.count == 1 }) {
            arguments[self.listParameter] = .array(batch.map { $0[0] })
            return arguments
        }
        for (row, key) in batch.enumerated() {
            for (column, value) in key.enumerated() { arguments[self.keyParameter(row, column)] = value }
        }
        return arguments
    }

    /// `keys` in batches of at most `size`; batches of keys of several columns are padded to a
    /// power of two with their last key.
    public static func batches(of keys: [[SQLValue]], size: Int) -> [[[SQLValue]]] {
        stride(from: 0, to: keys.count, by: size).map { start in
            var batch = Array(keys[start..<min(start + size, keys.count)])
            guard batch.contains(where: { $0.count > 1 }) else { return batch }
            var padded = 1
            while padded < batch.count { padded *= 2 }
            while batch.count < padded, let last = batch.last { batch.append(last) }
            return batch
        }
    }

    /// A key read back from the change log (``ChangeKeyText``) with each value in the type of
    /// its column in `columns` (the key's columns, in order, as the statement answers them):
    /// a date's or a timestamp's text as that value, an integer of a decimal column as a
    /// decimal; so it compares equal with the key of the row, and encodes as the row's does.
    /// Columns it does not know leave values as they are.
    public static func typed(_ key: [SQLValue], as columns: [Column]) -> [SQLValue] {
        key.enumerated().map { index, value in
            guard index < columns.count else { return value }
            switch (columns[index].type, value) {
            case (.date, .text(let text)): return CivilTime.parseDate(text).map { .date(days: $0) } ?? value
            case (.timestamp, .text(let text)): return CivilTime.parseTimestamp(text).map { .timestamp(microseconds: $0) } ?? value
            case (.decimal, .integer(let number)): return .decimal(String(number))
            default: return value
            }
        }
    }

    private static func condition(key: [String], count: Int, dialect: SQLDialect) -> String {
        if key.count == 1 { return dialect.membership(self.quoted(key[0]), inList: self.listParameter) }
        return (0..<count).map { row in
            "(" + key.enumerated().map { column, label in "\(self.quoted(label)) = :\(self.keyParameter(row, column))" }
                .joined(separator: " AND ") + ")"
        }.joined(separator: " OR ")
    }

    private static func quoted(_ label: String) -> String {
        "spout_sync.\"" + label.replacing("\"", with: "\"\"") + "\""
    }

    /// `sql` without trailing blanks and semicolons, which cannot stand inside parentheses.
    private static func trimmed(_ sql: String) -> String {
        var text = Substring(sql)
        while let last = text.last, last.isWhitespace || last == ";" { text.removeLast() }
        return String(text)
    }
}
