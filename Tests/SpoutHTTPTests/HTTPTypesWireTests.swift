import HTTPTypes
import NIOHTTP1
import Testing

@testable import SpoutHTTP

/// The server speaks swift-http-types and NIOHTTP1 writes the bytes: the conversions between the
/// two, and `replaceOrAdd`, keep the bytes Spout sent before it spoke swift-http-types.
@Suite("swift-http-types on NIOHTTP1's wire")
struct HTTPTypesWireTests {
    @Test("a status line has NIO's reason phrase for the code, never the status's own")
    func statusLine() {
        #expect(HTTPResponseStatus(HTTPResponse.Status.contentTooLarge).reasonPhrase == "Payload Too Large")
        #expect(HTTPResponseStatus(HTTPResponse.Status.unprocessableContent).reasonPhrase == "Unprocessable Entity")
        #expect(HTTPResponseStatus(HTTPResponse.Status(code: 404)).reasonPhrase == "Not Found")
        #expect(HTTPResponseStatus(HTTPResponse.Status.tooManyRequests).code == 429)
    }

    @Test("fields become NIO's headers in order, each name spelled as it was made")
    func fieldsToHeaders() {
        var fields: HTTPFields = [.contentType: "application/json", .requestID: "r-1"]
        fields.append(HTTPField(name: HTTPField.Name("x-lower")!, value: "v"))
        fields.append(HTTPField(name: .eTag, value: #""t""#))
        let headers = HTTPHeaders(fields)
        #expect(headers.map { $0.name } == ["Content-Type", "X-Request-Id", "x-lower", "ETag"])
        #expect(headers.map { $0.value } == ["application/json", "r-1", "v", #""t""#])
    }

    @Test("NIO's headers become fields in order and spelling, a repeated name kept")
    func headersToFields() {
        let fields = HTTPFields(HTTPHeaders([("accept", "text/csv"), ("X-Request-Id", "r"), ("Accept", "application/json")]))
        #expect(fields.map { $0.name.rawName } == ["accept", "X-Request-Id", "Accept"])
        #expect(fields[values: .accept] == ["text/csv", "application/json"])
    }

    @Test("replaceOrAdd removes every field of the name and puts the new one last")
    func replaceOrAdd() {
        var fields: HTTPFields = [.eTag: #""a""#, .vary: "Accept"]
        fields.append(HTTPField(name: .eTag, value: #""b""#))
        fields.append(HTTPField(name: .contentType, value: "text/plain"))
        fields.replaceOrAdd(.eTag, #""c""#)
        #expect(fields.map { $0.name } == [.vary, .contentType, .eTag])
        #expect(fields[values: .eTag] == [#""c""#])
    }
}
