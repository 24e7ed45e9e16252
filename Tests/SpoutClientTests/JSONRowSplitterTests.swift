import Foundation
import Testing

@testable import SpoutClient

/// Rows are cut out of a body whatever the chunk boundaries, and bad bodies are errors.
@Suite struct JSONRowSplitterTests {
    /// The rows of `body` fed `size` bytes at a time, as text.
    static func split(_ body: String, format: JSONRowSplitter.Format, chunkSize size: Int) throws -> [String] {
        var splitter = JSONRowSplitter(format: format)
        var rows: [String] = []
        let bytes = Array(body.utf8)
        var offset = 0
        while offset < bytes.count {
            splitter.feed(Array(bytes[offset..<min(offset + size, bytes.count)]))
            offset += size
            while let row = try splitter.nextRow() { rows.append(String(decoding: row, as: UTF8.self)) }
        }
        if let last = try splitter.finish() { rows.append(String(decoding: last, as: UTF8.self)) }
        return rows
    }

    @Test(arguments: [1, 2, 3, 7, 1000])
    func arrayRowsWhateverTheChunks(chunkSize: Int) throws {
        let body = #" [ {"a":"x,]}\"y","b":[1,{"c":[]}]} ,{"d":null}, "text]", 12.5e3 ,true,[[]]] "#
        let rows = try Self.split(body, format: .array, chunkSize: chunkSize)
        #expect(rows == [#"{"a":"x,]}\"y","b":[1,{"c":[]}]}"#, #"{"d":null}"#, #""text]""#, "12.5e3", "true", "[[]]"])
    }

    @Test(arguments: [1, 5, 1000])
    func jsonLinesWhateverTheChunks(chunkSize: Int) throws {
        let body = "{\"a\":1}\n\n{\"b\":\"x\\ny\"}\r\n{\"c\":3}"
        let rows = try Self.split(body, format: .lines, chunkSize: chunkSize)
        #expect(rows == [#"{"a":1}"#, "{\"b\":\"x\\ny\"}\r", #"{"c":3}"#])
    }

    @Test func emptyArray() throws {
        #expect(try Self.split("[]", format: .array, chunkSize: 1).isEmpty)
        #expect(try Self.split(" [ \n ] ", format: .array, chunkSize: 2).isEmpty)
    }

    @Test func unfinishedOrMalformedArraysThrow() {
        for body in [#"[{"a":1},"#, #"[{"a":1}"#, "", #"{"a":1}"#, "[1,,2]", "[1 2]", "[1] x", "[,1]"] {
            #expect(throws: SpoutClientError.self, "\(body)") { try Self.split(body, format: .array, chunkSize: 3) }
        }
    }

    @Test func heldBytesStayBoundedByOneRow() throws {
        // 10,000 rows fed in 4 KiB chunks: every row comes out, none is lost at a boundary.
        let row = #"{"employeeNumber":123456,"firstName":"Somebody","lastName":"Else"}"#
        let body = "[" + Array(repeating: row, count: 10_000).joined(separator: ",") + "]"
        let rows = try Self.split(body, format: .array, chunkSize: 4096)
        #expect(rows.count == 10_000)
        #expect(rows.allSatisfy { $0 == row })
    }
}
