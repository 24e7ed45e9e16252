import Testing

@testable import SpoutHTTP

@Suite("Bulk body decoders")
struct BulkRecordDecoderTests {
    /// The records of `body` pushed in pieces of `pieceSize` bytes, as (position, arguments).
    private func records(_ body: String, _ format: BulkFormat, pieceSize: Int = 1, maximumRecordSize: Int = 1 << 20) throws
        -> [BulkRecord]
    {
        var decoder = BulkRecordDecoder(format: format, maximumRecordSize: maximumRecordSize)
        var records: [BulkRecord] = []
        let bytes = Array(body.utf8)
        var start = 0
        while start < bytes.count {
            let end = min(start + pieceSize, bytes.count)
            try decoder.push(bytes[start..<end]) { records.append($0) }
            start = end
        }
        try decoder.finish { records.append($0) }
        return records
    }

    private func error(_ body: String, _ format: BulkFormat, maximumRecordSize: Int = 1 << 20) -> BulkRecordError? {
        #expect(throws: BulkRecordError.self) { try self.records(body, format, pieceSize: 7, maximumRecordSize: maximumRecordSize) }
    }

    @Test(arguments: [1, 3, 4096])
    func jsonArrayInAnyPieces(pieceSize: Int) throws {
        let body = #" [ {"name":"Rex","n":1}, {"name":"a \"}]{\" b","tags":["x","y"]},{} ] "#
        let records = try self.records(body, .jsonArray, pieceSize: pieceSize)
        #expect(records.map(\.position) == [.index(0), .index(1), .index(2)])
        #expect(records[0].arguments["name"] == ["Rex"])
        #expect(records[0].arguments["n"] == ["1"])
        #expect(records[1].arguments["name"] == [#"a "}]{" b"#])
        #expect(records[1].arguments.isList("tags"))
        #expect(records[2].arguments.keys.isEmpty)
        #expect(try self.records("[]", .jsonArray).isEmpty)
    }

    @Test func jsonArrayRefusalsNameTheIndex() {
        #expect(self.error(#"{"name":"Rex"}"#, .jsonArray)?.position == .index(0))
        #expect(self.error(#"[{"a":1},2]"#, .jsonArray)?.position == .index(1))
        #expect(self.error(#"[{"a":1},{"a":{"b":1}}]"#, .jsonArray)?.position == .index(1))
        #expect(self.error(#"[{"a":1},{"a":2}"#, .jsonArray)?.position == .index(2))
        #expect(self.error(#"[{"a":1},]"#, .jsonArray)?.position == .index(1))
        #expect(self.error(#"[{"a":1}] x"#, .jsonArray) != nil)
        #expect(self.error(#"[{"a":1} {"a":2}]"#, .jsonArray)?.position == .index(1))
        let large = self.error(#"[{"a":1},{"a":"0123456789"}]"#, .jsonArray, maximumRecordSize: 10)
        #expect(large?.position == .index(1))
        #expect(large?.argument.description == "record larger than 10 bytes")
    }

    @Test(arguments: [1, 5, 4096])
    func jsonLinesInAnyPieces(pieceSize: Int) throws {
        let body = "{\"name\":\"Rex\"}\r\n\n  \n{\"name\":\"Fang\",\"n\":null}\n{\"name\":\"Claws\"}"
        let records = try self.records(body, .jsonLines, pieceSize: pieceSize)
        #expect(records.map(\.position) == [.line(1), .line(4), .line(5)])
        #expect(records.map { $0.arguments["name"] } == [["Rex"], ["Fang"], ["Claws"]])
        #expect(records[1].arguments.contains("n") && records[1].arguments["n"].isEmpty)
        #expect(try self.records("", .jsonLines).isEmpty)
    }

    @Test func jsonLinesRefusalsNameTheLine() {
        let error = self.error("{\"a\":1}\n{\"a\":2}\n{\"a\":\n", .jsonLines)
        #expect(error?.position == .line(3))
        let body = String(decoding: error?.responseBody ?? [], as: UTF8.self)
        #expect(body.contains(#""line":3"#))
        #expect(self.error("{\"a\":1}\n[1]\n", .jsonLines)?.position == .line(2))
        #expect(self.error("{\"a\":1}\n{\"a\":2} {\"a\":3}\n", .jsonLines)?.position == .line(2))
    }

    @Test(arguments: [1, 2, 4096])
    func csvInAnyPieces(pieceSize: Int) throws {
        let body = "\u{FEFF}name,remark,n\r\nRex,\"said \"\"hi\"\",\nthen left\",1\n\nFang,\"\",\nClaws,plain,3"
        let records = try self.records(body, .csv, pieceSize: pieceSize)
        #expect(records.map(\.position) == [.line(2), .line(5), .line(6)])
        #expect(records[0].arguments["name"] == ["Rex"])
        #expect(records[0].arguments["remark"] == ["said \"hi\",\nthen left"])
        #expect(records[0].arguments["n"] == ["1"])
        // A quoted empty field is empty text; an empty field without quotes is null.
        #expect(records[1].arguments["remark"] == [""])
        #expect(records[1].arguments.contains("n") && records[1].arguments["n"].isEmpty)
        #expect(records[2].arguments["remark"] == ["plain"])
        #expect(records[2].arguments.keys == ["name", "remark", "n"])
    }

    @Test func csvRefusalsNameTheLine() {
        let fields = self.error("a,b\n1,2\n\"x\ny\",2,3\n", .csv)
        #expect(fields?.position == .line(3))
        #expect(fields?.argument.description == "3 fields where the header names 2")
        #expect(self.error("a,b\n1,x\"y\n", .csv)?.position == .line(2))
        #expect(self.error("a,b\n1,\"x\"y\n", .csv)?.position == .line(2))
        #expect(self.error("a,b\n1,\"open\n", .csv)?.position == .line(2))
        #expect(self.error("a,a\n1,2\n", .csv)?.position == .line(1))
        #expect(self.error("a,\n1,2\n", .csv)?.position == .line(1))
        #expect(self.error("", .csv)?.position == .line(1))
        var decoder = BulkRecordDecoder(format: .csv)
        let invalid = #expect(throws: BulkRecordError.self) {
            try decoder.push(Array("a,b\n1,".utf8) + [0xFF, 0x0A]) { _ in }
        }
        #expect(invalid?.argument == ArgumentError(.invalidEncoding, parameter: "b"))
        #expect(invalid?.position == .line(2))
    }

    @Test func textIsCheckedAsUTF8() {
        func text(_ bytes: [UInt8]) -> String? { bytes.withUnsafeBufferPointer(UTF8Text.validated) }
        #expect(text([]) == "")
        #expect(text(Array("plain ASCII, longer than eight".utf8)) == "plain ASCII, longer than eight")
        #expect(text(Array("eight by: é and 漢字".utf8)) == "eight by: é and 漢字")
        #expect(text(Array("12345678".utf8) + [0xFF]) == nil)
        #expect(text([0x41, 0xC3]) == nil)
    }

    @Test func formatsByMediaType() {
        #expect(BulkFormat(contentType: "application/json; charset=utf-8") == .jsonArray)
        #expect(BulkFormat(contentType: "application/x-ndjson") == .jsonLines)
        #expect(BulkFormat(contentType: "application/jsonl") == .jsonLines)
        #expect(BulkFormat(contentType: "Text/CSV; header=present") == .csv)
        #expect(BulkFormat(contentType: "application/x-www-form-urlencoded") == nil)
        #expect(BulkFormat(contentType: nil) == nil)
    }

    @Test func errorBodyNamesPositionAndParameter() {
        let error = BulkRecordError(ArgumentError(.invalid(.date), parameter: "date", value: "tomorrow"), at: .index(50_000))
        #expect(
            String(decoding: error.responseBody, as: UTF8.self)
                == #"{"error":"invalid date","index":50000,"parameter":"date","value":"tomorrow"}"#)
        #expect(error.status == .badRequest)
    }
}
