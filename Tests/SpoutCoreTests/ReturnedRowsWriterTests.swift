import SpoutCore
import Testing

/// ``ReturnedRowsWriter``: the rows of many statements' answers as one JSON array, each row as
/// a single write writes it, in the order appended.
@Suite("Returned rows writer")
struct ReturnedRowsWriterTests {
    static func result(_ labels: [String], _ rows: [[SQLValue]]) -> QueryResult {
        QueryResult(columns: labels.map { Column(label: $0, type: .unknown) }, rows: rows)
    }

    @Test("rows of several answers make one array in order; answers without rows add nothing")
    func rowsInOrder() throws {
        let sink = CollectingSink()
        let writer = ReturnedRowsWriter(dateFormat: .iso8601, sink: sink)
        try writer.append(Self.result(["id", "name"], [[.integer(1), .text("Rex")]]))
        try writer.append(Self.result(["id", "name"], []))
        try writer.append(Self.result(["id", "name"], [[.integer(2), .null], [.integer(3), .text("a \"cat\"")]]))
        try writer.finish()
        #expect(sink.isFinished)
        #expect(sink.text == #"[{"id":1,"name":"Rex"},{"id":2,"name":null},{"id":3,"name":"a \"cat\""}]"#)
        #expect(writer.rowCount == 3)
    }

    @Test("no rows at all is an empty array")
    func noRows() throws {
        let sink = CollectingSink()
        let writer = ReturnedRowsWriter(dateFormat: .iso8601, sink: sink)
        try writer.append(Self.result(["id"], []))
        try writer.finish()
        #expect(sink.text == "[]")
    }

    @Test("rows of other columns than the first row's are refused")
    func otherColumns() throws {
        let writer = ReturnedRowsWriter(dateFormat: .iso8601, sink: CollectingSink())
        try writer.append(Self.result(["id"], [[.integer(1)]]))
        #expect(throws: DatabaseError.self) { try writer.append(Self.result(["key"], [[.integer(2)]])) }
    }
}
