import Foundation

/// One sync read's answer (`GET <path>?since=<cursor>` as JSON Lines, docs/endpoints.md, Sync
/// reads), read whole: the new cursor, the keys to forget and the rows to upsert, each row's
/// bytes exactly as the server sent them.
///
/// Keys are compared as text: the key columns' values, in the order the store names them, as a
/// compact JSON array (`["Rex"]`), made the same way from a row and from a tombstone.
struct SyncDelta: Sendable {
    var cursor: String
    /// The keys of `{"deleted":{…}}` lines.
    var deleted: [String] = []
    /// The `{"row":…}` lines: key and the row's bytes.
    var rows: [(key: String, json: [UInt8])] = []

    private static let cursorPrefix = Array(#"{"cursor":"#.utf8)
    private static let deletedPrefix = Array(#"{"deleted":"#.utf8)
    private static let rowPrefix = Array(#"{"row":"#.utf8)

    /// Reads `body` (JSON Lines) to its end. Throws ``SpoutClientError/malformedBody(_:)``
    /// for a line that is none of the three, a body without its cursor, or a row or tombstone
    /// without one of the `key` columns; a body cut short throws as the transport says
    /// (``SpoutClientError/truncatedBody``).
    static func read(_ body: any ResponseBodyReader, key: [String]) async throws -> SyncDelta {
        var splitter = JSONRowSplitter(format: .lines)
        var cursor: String?
        var delta = SyncDelta(cursor: "")
        func take(_ line: ArraySlice<UInt8>) throws {
            if line.starts(with: Self.rowPrefix) {
                guard line.last == UInt8(ascii: "}") else { throw SpoutClientError.malformedBody("a sync row line does not end with }") }
                let json = Array(line.dropFirst(Self.rowPrefix.count).dropLast())
                delta.rows.append((try Self.keyText(ofObject: json, key: key), json))
            } else if line.starts(with: Self.deletedPrefix) {
                guard let tombstone = try Self.object(line)["deleted"] as? [String: Any] else {
                    throw SpoutClientError.malformedBody("a sync tombstone is not an object")
                }
                delta.deleted.append(try Self.keyText(of: tombstone, key: key))
            } else if line.starts(with: Self.cursorPrefix) {
                guard let text = try Self.object(line)["cursor"] as? String else {
                    throw SpoutClientError.malformedBody("a sync cursor is not a string")
                }
                cursor = text
            } else {
                throw SpoutClientError.malformedBody("a sync read's line is none of cursor, deleted and row")
            }
        }
        defer { body.close() }
        while let chunk = try await body.nextChunk() {
            splitter.feed(chunk)
            while let line = try splitter.nextRow() { try take(line) }
        }
        if let last = try splitter.finish() { try take(last) }
        guard let cursor else { throw SpoutClientError.malformedBody("the sync read sent no cursor") }
        delta.cursor = cursor
        return delta
    }

    /// The key text of a row's JSON object.
    static func keyText(ofObject json: [UInt8], key: [String]) throws -> String {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any] else {
            throw SpoutClientError.malformedBody("a synced row is not a JSON object")
        }
        return try self.keyText(of: object, key: key)
    }

    /// The `key` columns' values of `object` as a compact JSON array.
    static func keyText(of object: [String: Any], key: [String]) throws -> String {
        let values = try key.map { column in
            guard let value = object[column] else {
                throw SpoutClientError.malformedBody("a synced row or tombstone has no key column '\(column)'")
            }
            return value
        }
        let data = try JSONSerialization.data(withJSONObject: values, options: [.fragmentsAllowed, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    private static func object(_ line: ArraySlice<UInt8>) throws -> [String: Any] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] else {
            throw SpoutClientError.malformedBody("a sync read's line is not a JSON object")
        }
        return object
    }
}
