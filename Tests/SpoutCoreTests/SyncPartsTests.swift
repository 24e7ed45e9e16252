import SpoutCore
import Testing

/// The pure parts of sync reads: the body's framing, the wrapped statements, the change log's
/// keys read back, and the triggers' names.
@Suite("Sync read parts")
struct SyncPartsTests {
    /// Rows as a row encoder writes them in JSON Lines, split at awkward places.
    static let rowLines = #"{"name":"Bowser","n":1}"# + "\n" + #"{"name":"Rex","s":"a\nb"}"# + "\n"

    static func write(_ format: SyncBodyWriter.Format, splits: [Int]) throws -> String {
        let sink = CollectingSink()
        let writer = SyncBodyWriter(format: format, sink: sink)
        try writer.begin(cursor: "AbC_-")
        try writer.deleted(labels: ["name"], values: [.text("Puffball")], dateFormat: .epochMilliseconds)
        try writer.deleted(labels: ["name", "born"], values: [.text("Fang"), .date(days: 1)], dateFormat: .epochMilliseconds)
        let bytes = Array(Self.rowLines.utf8)
        var start = 0
        for split in splits + [bytes.count] {
            try bytes[start..<split].withUnsafeBytes { try writer.rowSink.write($0) }
            start = split
        }
        try [UInt8]().withUnsafeBytes { try writer.rowSink.finish($0) }
        try writer.end()
        #expect(sink.isFinished)
        #expect(writer.rows == 2)
        return sink.text
    }

    @Test("JSON: the cursor, the keys to forget, then the rows as written, wherever the encoder's chunks end", arguments: [[], [1], [23, 24], [24, 25, 40]])
    func json(_ splits: [Int]) throws {
        #expect(
            try Self.write(.json, splits: splits)
                == #"{"cursor":"AbC_-","deleted":[{"name":"Puffball"},{"name":"Fang","born":86400000}],"rows":[{"name":"Bowser","n":1},{"name":"Rex","s":"a\nb"}]}"#)
    }

    @Test("JSON Lines: a line for the cursor, each key and each row", arguments: [[], [5], [23, 24], [24, 25, 40]])
    func jsonLines(_ splits: [Int]) throws {
        #expect(
            try Self.write(.jsonLines, splits: splits)
                == #"{"cursor":"AbC_-"}"# + "\n" + #"{"deleted":{"name":"Puffball"}}"# + "\n" + #"{"deleted":{"name":"Fang","born":86400000}}"#
                + "\n" + #"{"row":{"name":"Bowser","n":1}}"# + "\n" + #"{"row":{"name":"Rex","s":"a\nb"}}"# + "\n")
    }

    @Test("many rows in small pieces: each framed whole, across the output's chunks", arguments: [SyncBodyWriter.Format.json, .jsonLines])
    func manyRows(_ format: SyncBodyWriter.Format) throws {
        let rows = (0..<3000).map { #"{"name":"p\#($0)","s":"\#(String(repeating: "x", count: $0 % 40))"}"# }
        let sink = CollectingSink()
        let writer = SyncBodyWriter(format: format, sink: sink)
        try writer.begin(cursor: "c")
        let bytes = Array(rows.map { $0 + "\n" }.joined().utf8)
        for start in stride(from: 0, to: bytes.count, by: 7) {
            try bytes[start..<min(start + 7, bytes.count)].withUnsafeBytes { try writer.rowSink.write($0) }
        }
        try writer.end()
        #expect(writer.rows == 3000)
        switch format {
        case .json: #expect(sink.text == #"{"cursor":"c","deleted":[],"rows":["# + rows.joined(separator: ",") + "]}")
        case .jsonLines: #expect(sink.text == #"{"cursor":"c"}"# + "\n" + rows.map { #"{"row":"# + $0 + "}\n" }.joined())
        }
    }

    @Test("an empty delta is a cursor and two empty lists")
    func empty() throws {
        let sink = CollectingSink()
        let writer = SyncBodyWriter(format: .json, sink: sink)
        try writer.begin(cursor: "c")
        try writer.end()
        #expect(sink.text == #"{"cursor":"c","deleted":[],"rows":[]}"#)
    }

    @Test("a key to forget after a row is refused: the JSON would not hold together")
    func forgottenAfterRows() throws {
        let writer = SyncBodyWriter(format: .json, sink: CollectingSink())
        try writer.begin(cursor: "c")
        try Array(Self.rowLines.utf8).withUnsafeBytes { try writer.rowSink.write($0) }
        #expect(throws: DatabaseError.self) {
            try writer.deleted(labels: ["name"], values: [.text("Puffball")], dateFormat: .epochMilliseconds)
        }
    }

    @Test("a delta's cursor: the statement's columns only, its rows only, each key to forget handed over as it is passed")
    func deltaCursor() throws {
        let columns = [
            Column(label: "name", type: .text), Column(label: "n", type: .integer),
            Column(label: "spout_key_0", type: .text),
        ]
        // Where keys repeat, a key touched more than once comes in adjacent rows: each is
        // passed on once.
        let rows: [[SQLValue]] = [
            [.null, .null, .text("Fang")], [.null, .null, .text("Puffball")], [.null, .null, .text("Puffball")],
            [.text("Bowser"), .integer(1), .text("Bowser")], [.text("Bowser"), .integer(1), .text("Bowser")],
            [.text("Rex"), .null, .text("Rex")],
        ]
        for keysRepeat in [true, false] {
            let given = keysRepeat ? rows : [rows[0], rows[1], rows[3], rows[5]]
            var forgotten: [[SQLValue]] = []
            let cursor = try SyncDeltaCursor(BufferedCursor(QueryResult(columns: columns, rows: given)), key: ["name"], keysRepeat: keysRepeat) {
                forgotten.append($0)
            }
            #expect(cursor.columns.map(\.label) == ["name", "n"])
            var seen: [[SQLValue]] = []
            while try cursor.next() {
                #expect(forgotten.count == 2)
                #expect(!cursor.isNull(at: 0))
                seen.append([cursor.value(at: 0), cursor.value(at: 1)])
            }
            #expect(forgotten == [[.text("Fang")], [.text("Puffball")]])
            #expect(seen == [[.text("Bowser"), .integer(1)], [.text("Rex"), .null]])
        }
        // A key of two columns whose first value repeats and second does not is a new key.
        let pairs = [Column(label: "a", type: .integer), Column(label: "spout_key_0", type: .integer), Column(label: "spout_key_1", type: .integer)]
        let pairRows: [[SQLValue]] = [
            [.integer(1), .integer(1), .integer(1)], [.integer(1), .integer(1), .integer(1)], [.null, .integer(1), .integer(2)],
        ]
        var forgottenPairs: [[SQLValue]] = []
        let pairCursor = try SyncDeltaCursor(BufferedCursor(QueryResult(columns: pairs, rows: pairRows)), key: ["a", "b"], keysRepeat: true) {
            forgottenPairs.append($0)
        }
        var passed = 0
        while try pairCursor.next() { passed += 1 }
        #expect(passed == 1)
        #expect(forgottenPairs == [[.integer(1), .integer(2)]])
        // A result without the key among the statement's columns is refused, not misread.
        #expect(throws: DatabaseError.self) {
            try SyncDeltaCursor(BufferedCursor(QueryResult(columns: columns, rows: [])), key: ["spout_key_0"], keysRepeat: true) { _ in }
        }
    }

    @Test("the wrapped statements: trailing semicolons go, one key column is one list parameter, several an OR of ANDs")
    func statements() {
        #expect(
            SyncQuery.keys(of: "SELECT name FROM pet ORDER BY name;\n", key: ["name"], count: 2, dialect: .postgres)
                == "SELECT spout_sync.\"name\" FROM (\nSELECT name FROM pet ORDER BY name\n) AS spout_sync WHERE spout_sync.\"name\" = ANY(:spout_sync_keys)")
        #expect(
            SyncQuery.keys(of: "SELECT name FROM pet", key: ["name"], count: 5, dialect: .sqlite)
                == "SELECT spout_sync.\"name\" FROM (\nSELECT name FROM pet\n) AS spout_sync WHERE spout_sync.\"name\" IN (SELECT value FROM json_each(:spout_sync_keys))")
        #expect(SyncQuery.wrapped("SELECT 1;") == "(\nSELECT 1\n) AS spout_sync")
        // The final ORDER BY goes where no row depends on it: not before a LIMIT, OFFSET or
        // FETCH, nor with a DISTINCT ON; an ORDER BY in parentheses or a string stays.
        #expect(SyncQuery.wrapped("SELECT name FROM pet ORDER BY name COLLATE \"C\";") == "(\nSELECT name FROM pet\n) AS spout_sync")
        #expect(
            SyncQuery.wrapped("SELECT a, (SELECT string_agg(b, ',' ORDER BY b) FROM t) AS 'ORDER BY' FROM u -- ORDER BY a\nORDER BY a")
                == "(\nSELECT a, (SELECT string_agg(b, ',' ORDER BY b) FROM t) AS 'ORDER BY' FROM u\n) AS spout_sync")
        for kept in [
            "SELECT name FROM pet ORDER BY name LIMIT 5", "SELECT name FROM pet ORDER BY name OFFSET 2",
            "SELECT name FROM pet ORDER BY name FETCH FIRST 3 ROWS ONLY", "SELECT DISTINCT ON (owner) name FROM pet ORDER BY owner, name",
        ] {
            #expect(SyncQuery.wrapped(kept + ";") == "(\n\(kept)\n) AS spout_sync")
        }
        #expect(SyncQuery.keyMatch(["a", "b"]) == "spout_sync.\"a\" = spout_changed.spout_key_0 AND spout_sync.\"b\" = spout_changed.spout_key_1")
        #expect(SyncQuery.forgottenFirst(["a", "b"]) == "ORDER BY spout_sync.\"a\" IS NULL DESC")
        #expect(
            SyncQuery.forgottenFirst(["a", "b"], adjacentKeys: true)
                == "ORDER BY spout_sync.\"a\" IS NULL DESC, spout_changed.spout_key_0, spout_changed.spout_key_1")
        #expect(
            SyncQuery.keys(of: "SELECT a, b FROM t", key: ["a", "b"], count: 2, dialect: .sqlite)
                == "SELECT spout_sync.\"a\", spout_sync.\"b\" FROM (\nSELECT a, b FROM t\n) AS spout_sync WHERE (spout_sync.\"a\" = :spout_sync_0_0 AND spout_sync.\"b\" = :spout_sync_0_1) OR (spout_sync.\"a\" = :spout_sync_1_0 AND spout_sync.\"b\" = :spout_sync_1_1)")
        #expect(SyncQuery.arguments(["owner": .text("o")], keys: [[.text("a")], [.text("b")]])
            == ["owner": .text("o"), "spout_sync_keys": .array([.text("a"), .text("b")])])
        #expect(SyncQuery.arguments([:], keys: [[.integer(1), .text("x")]]) == ["spout_sync_0_0": .integer(1), "spout_sync_0_1": .text("x")])
    }

    @Test("batches hold at most their size; those of keys of several columns are padded to a power of two with their last key")
    func batches() {
        let keys: [[SQLValue]] = (1...11).map { [.integer(Int64($0)), .text("x")] }
        let batches = SyncQuery.batches(of: keys, size: 8)
        #expect(batches.map(\.count) == [8, 4])
        #expect(batches[1] == [[.integer(9), .text("x")], [.integer(10), .text("x")], [.integer(11), .text("x")], [.integer(11), .text("x")]])
        #expect(SyncQuery.batches(of: keys.map { [$0[0]] }, size: 8).map(\.count) == [8, 3])
        #expect(SyncQuery.batches(of: [], size: 8).isEmpty)
    }

    @Test("keys read back from the change log, typed as the key's columns are")
    func keys() {
        #expect(ChangeKeyText.values(#"[10004]"#) == [.integer(10004)])
        #expect(ChangeKeyText.values(#" ["Rex", "d\u00e9j\u00e0", null, true, 1.50] "#) == [.text("Rex"), .text("déjà"), .null, .bool(true), .decimal("1.50")])
        #expect(ChangeKeyText.values(#"[{"a":1}]"#) == nil)
        #expect(ChangeKeyText.values(#"[1] x"#) == nil)
        #expect(ChangeKeyText.values(#"[]"#) == [])
        let columns = [Column(label: "day", type: .date), Column(label: "amount", type: .decimal), Column(label: "name", type: .text)]
        #expect(SyncQuery.typed([.text("1970-01-02"), .integer(10), .text("x")], as: columns) == [.date(days: 1), .decimal("10"), .text("x")])
    }

    @Test("a delta reads the statement once from 1,000 changes on, when its estimated rows are at most three per change")
    func deltaChoice() {
        #expect(SyncDeltaChoice.changesToScan(estimatedRows: 0) == 1_000)
        #expect(SyncDeltaChoice.changesToScan(estimatedRows: 3_000) == 1_000)
        #expect(SyncDeltaChoice.changesToScan(estimatedRows: 3_001) == 1_001)
        #expect(SyncDeltaChoice.changesToScan(estimatedRows: 30_000) == 10_000)
        #expect(!SyncDeltaChoice.scans(changes: 999, estimatedRows: 10))
        #expect(SyncDeltaChoice.scans(changes: 1_000, estimatedRows: 10))
        #expect(SyncDeltaChoice.scans(changes: 10_000, estimatedRows: 30_000))
        #expect(!SyncDeltaChoice.scans(changes: 10_000, estimatedRows: 30_001))
        #expect(!SyncDeltaChoice.scans(changes: 100_000, estimatedRows: nil))
        #expect(!SyncDeltaChoice.scans(changes: 100_000, estimatedRows: -1))
    }

    @Test("trigger names follow the table and its key columns, the same in every process")
    func triggerNames() {
        let pets = TrackedTable(name: "pet", keyColumns: ["name"])
        #expect(pets.logName == "pet(name)")
        #expect(pets.triggerSuffix == TrackedTable(name: "pet", keyColumns: ["name"]).triggerSuffix)
        #expect(pets.triggerSuffix != TrackedTable(name: "pet", keyColumns: ["owner"]).triggerSuffix)
        #expect(pets.triggerSuffix.count == 8)
        #expect(TrackedTable.isPlainIdentifier("pet_event2") && !TrackedTable.isPlainIdentifier("2pet") && !TrackedTable.isPlainIdentifier("a;b"))
    }
}
