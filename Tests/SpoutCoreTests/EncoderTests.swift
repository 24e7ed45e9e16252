import Foundation
import SpoutCore
import Testing

/// Rows held in memory under `labels`, to test encoders without a database. (The row streams
/// are tested against real databases in SpoutDriverTests.)
func memoryCursor(_ labels: [String], _ rows: [[SQLValue]]) -> BufferedCursor {
    BufferedCursor(QueryResult(columns: labels.map { Column(label: $0, type: .unknown) }, rows: rows))
}

/// Encodes a fixed set of rows through the public RowStream API on an in-memory connection.
func encode(_ labels: [String], _ rows: [[SQLValue]], format: OutputFormat = .json(), shape: ResultShape = .array, dateFormat: DateFormat = .epochMilliseconds) throws -> String {
    let sink = CollectingSink()
    let connection = MemoryConnection(cursor: memoryCursor(labels, rows))
    try RowStream("SELECT rows").write(as: format, shape: shape, to: sink, on: connection, dateFormat: dateFormat)
    #expect(sink.isFinished)
    return sink.text
}

/// A connection that answers every query with one prepared cursor (encoder tests only).
final class MemoryConnection: DatabaseConnection, @unchecked Sendable {
    // Unchecked: used by one test on one thread.
    let cursor: BufferedCursor
    init(cursor: BufferedCursor) { self.cursor = cursor }
    var dialect: SQLDialect { .sqlite }
    func query(_ sql: ParsedSQL, _ parameters: [SQLValue], options: QueryOptions) throws -> any RowCursor { self.cursor }
    func execute(_ sql: ParsedSQL, _ parameters: [SQLValue]) throws -> Int { 0 }
    func explain(_ sql: ParsedSQL, _ parameters: [SQLValue], options: QueryOptions) throws -> [String] { [] }
    func executeScript(_ sql: String) throws {}
    func begin(readOnly: Bool) throws {}
    func commit() throws {}
    func rollback() throws {}
    func tableExists(_ name: String) throws -> Bool { false }
    func lockUntilTransactionEnds(_ key: Int64) throws {}
    var isInTransaction: Bool { false }
    func setStatementTimeout(milliseconds: Int?) throws {}
    func setReadOnly(_ readOnly: Bool) throws {}
    func cancel() {}
    var isBroken: Bool { false }
    func reset() -> Bool { true }
    func close() {}
    func bulkInsert(into table: String, columns: [String]) throws -> any BulkInserter {
        throw DatabaseError(.unsupported)
    }
}

@Suite struct EncoderTests {
    @Test func mapsEveryValueKind() throws {
        let row: [SQLValue] = [
            .null, .integer(-42), .double(1.5), .double(.nan), .double(.infinity), .decimal("12.3400"),
            .decimal("NaN"), .bool(true), .text("a\"b\\c\n\u{1}"), .date(days: 2_932_532),
            .timestamp(microseconds: 1_500_000_123), .time("12:34:56"), .json("{\"a\":[1,2]}"),
            .bytes([0xde, 0xad, 0xbe, 0xef]), .array([.integer(1), .null, .text("x")]),
        ]
        let labels = (0..<row.count).map { "c\($0)" }
        let json = try encode(labels, [row])
        #expect(json == #"[{"c0":null,"c1":-42,"c2":1.5,"c3":null,"c4":null,"c5":12.3400,"c6":null,"c7":true,"c8":"a\"b\\c\n\u0001","c9":253370764800000,"c10":1500000,"c11":"12:34:56","c12":{"a":[1,2]},"c13":"3q2+7w==","c14":[1,null,"x"]}]"#)
    }

    @Test func isoDates() throws {
        let json = try encode(["d", "t"], [[.date(days: 0), .timestamp(microseconds: -1_000)]], dateFormat: .iso8601)
        #expect(json == #"[{"d":"1970-01-01","t":"1969-12-31T23:59:59.999Z"}]"#)
    }

    @Test func dottedLabelsNest() throws {
        let json = try encode(["id", "department.name", "x", "department.number"], [[1, "Sales", true, "d007"]])
        #expect(json == #"[{"id":1,"department":{"name":"Sales","number":"d007"},"x":true}]"#)
    }

    @Test("results whose labels hash alike (same lengths, same types) keep their own keys, in every format")
    func labelsOfTheSameShapeKeepTheirOwnKeys() throws {
        // Plans are made once per column list; these lists differ only in their labels'
        // characters, or in a dot, so only a full comparison tells them apart.
        let row: [SQLValue] = [1, "x"]
        for _ in 0..<2 {
            #expect(try encode(["ab", "cd"], [row]) == #"[{"ab":1,"cd":"x"}]"#)
            #expect(try encode(["ef", "gh"], [row]) == #"[{"ef":1,"gh":"x"}]"#)
            #expect(try encode(["e.", "gh"], [row]) == #"[{"e.":1,"gh":"x"}]"#)
            #expect(try encode(["e.f", "g.h"], [row]) == #"[{"e":{"f":1},"g":{"h":"x"}}]"#)
            #expect(try encode(["e.f", "e.h"], [row]) == #"[{"e":{"f":1,"h":"x"}}]"#)
            #expect(try encode(["ab", "cd"], [row], format: .jsonLines) == #"{"ab":1,"cd":"x"}"# + "\n")
            #expect(try encode(["ef", "gh"], [row], format: .json(pretty: true)) == "[\n  {\n    \"ef\": 1,\n    \"gh\": \"x\"\n  }\n]\n")
            #expect(try encode(["ef", "gh"], [row], format: .csv) == "ef,gh\r\n1,x\r\n")
        }
    }

    @Test func emptyResults() throws {
        #expect(try encode(["a"], []) == "[]")
        #expect(try encode(["a"], [], format: .jsonLines) == "")
        #expect(try encode(["a", "b"], [], format: .csv) == "a,b\r\n")
        #expect(throws: RowStreamError.noRow) { try encode(["a"], [], shape: .object) }
        #expect(throws: RowStreamError.noRow) { try encode(["a"], [], shape: .scalar) }
    }

    @Test func shapes() throws {
        let rows: [[SQLValue]] = [[1, "x"], [2, "y"]]
        #expect(try encode(["a", "b"], rows, shape: .object) == #"{"a":1,"b":"x"}"#)
        #expect(try encode(["a", "b"], rows, shape: .scalar) == "1")
        #expect(try encode(["a", "b"], rows, format: .jsonLines) == "{\"a\":1,\"b\":\"x\"}\n{\"a\":2,\"b\":\"y\"}\n")
    }

    @Test func prettyJSONParsesToTheSameValue() throws {
        let rows: [[SQLValue]] = [[1, "x", .null], [2, "y", .array([1, 2])]]
        let compact = try encode(["a", "b.c", "d"], rows)
        let pretty = try encode(["a", "b.c", "d"], rows, format: .json(pretty: true))
        #expect(pretty.contains("\n  {\n    \"a\": 1,"))
        let left = try JSONSerialization.jsonObject(with: Data(compact.utf8)) as? NSArray
        let right = try JSONSerialization.jsonObject(with: Data(pretty.utf8)) as? NSArray
        #expect(left != nil && left == right)
    }

    @Test func csvQuotesWhatNeedsQuoting() throws {
        let csv = try encode(["name", "note", "n"], [["plain", "a,b \"q\"\r\nline", .null], ["x", .json("[1]"), 2.5]], format: .csv)
        #expect(csv == "name,note,n\r\nplain,\"a,b \"\"q\"\"\r\nline\",\r\nx,[1],2.5\r\n")
    }

    @Test func csvRefusesAttachmentsBeforeWriting() throws {
        let sink = CollectingSink()
        let stream = RowStream("SELECT 1").attaching("children", "SELECT 2")
        #expect(throws: RowStreamError.attachmentsNotAllowedInCSV) {
            try stream.write(as: .csv, to: sink, on: MemoryConnection(cursor: memoryCursor(["a"], [[1]])))
        }
        #expect(sink.bytes.isEmpty && !sink.isFinished)
    }

    @Test func largeOutputIsChunked() throws {
        let rows = (0..<20_000).map { [SQLValue.integer(Int64($0)), SQLValue.text("row number \($0)")] }
        let sink = CollectingSink()
        try RowStream("SELECT rows").write(as: .json(), to: sink, on: MemoryConnection(cursor: memoryCursor(["n", "t"], rows)))
        #expect(sink.chunkCount > 5)
        let parsed = try JSONSerialization.jsonObject(with: Data(sink.bytes)) as? [[String: Any]]
        #expect(parsed?.count == 20_000)
        #expect(parsed?.last?["t"] as? String == "row number 19999")
    }

    /// Every string from a randomized generator survives a round trip through a real parser.
    @Test func escapedStringsRoundTripThroughJSONSerialization() throws {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [Unicode.Scalar] = (0..<0x80).compactMap(Unicode.Scalar.init)
            + ["é", "€", "\u{2028}", "\u{2029}", "\u{FFFD}", "😀", "\u{7F}", "\u{0}", "中"]
        var strings: [String] = ["", "\"", "\\", "\u{0}\u{1F}"]
        for _ in 0..<2_000 {
            let length = Int.random(in: 0...40, using: &generator)
            var text = String.UnicodeScalarView()
            for _ in 0..<length { text.append(alphabet.randomElement(using: &generator)!) }
            strings.append(String(text))
        }
        let json = try encode(["s"], strings.map { [SQLValue.text($0)] })
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: String]])
        #expect(parsed.map { $0["s"]! } == strings)
    }

    /// JSON built outside a stream (log lines, SQLite's array parameters) escapes each string
    /// to the same bytes as a row's value: every ASCII byte, alone and between letters.
    @Test func appendedStringsMatchStreamedStrings() throws {
        var strings = (0..<0x80).map { String(UnicodeScalar(UInt8($0))) }
        strings += (0..<0x80).map { "a\(UnicodeScalar(UInt8($0)))b" } + ["", "é€😀\u{2028}"]
        let streamed = try encode(["s"], strings.map { [SQLValue.text($0)] })
        var appended = Array("[".utf8)
        for (index, string) in strings.enumerated() {
            appended += Array((index == 0 ? "{\"s\":" : ",{\"s\":").utf8)
            JSONText.appendString(string, to: &appended)
            appended.append(UInt8(ascii: "}"))
        }
        appended.append(UInt8(ascii: "]"))
        #expect(String(decoding: appended, as: UTF8.self) == streamed)
        #expect(streamed.contains(#"{"s":"\b"}"#) && streamed.contains(#"{"s":"\u001f"}"#))
    }

    @Test func invalidUTF8BecomesReplacementCharacter() throws {
        let text = String(decoding: [0x61, 0xFF, 0x62], as: UTF8.self)
        #expect(try encode(["s"], [[.text(text)]]) == "[{\"s\":\"a\u{FFFD}b\"}]")
    }
}
