import HTTPTypes
import SpoutCore
import Testing

@testable import SpoutHTTP

@Suite("Content negotiation and error mapping")
struct ResponseMappingTests {
    @Test(arguments: [
        (nil, OutputFormat?.some(.json(pretty: false))), ("", .json(pretty: false)), ("*/*", .json(pretty: false)),
        ("application/json", .json(pretty: false)), ("application/*", .json(pretty: false)),
        ("application/x-ndjson", .jsonLines), ("text/csv", .csv), ("text/*", .csv),
        ("text/csv;q=0.5, application/x-ndjson;q=0.8", .jsonLines),
        ("application/json;q=0.1, text/csv", .csv),
        ("text/csv;q=0, */*", .json(pretty: false)),
        ("text/html, application/xhtml+xml", nil), ("application/json;q=0", nil), ("image/png", nil),
    ] as [(String?, OutputFormat?)])
    func negotiation(accept: String?, expected: OutputFormat?) {
        #expect(ContentNegotiation.format(accept: accept) == expected)
    }

    /// A stored file offers its one type: a browser's image `Accept` takes it, JSON does not.
    @Test(arguments: [
        (nil, true), ("*/*", true), ("image/*", true), ("image/avif,image/webp,*/*;q=0.8", true), ("IMAGE/PNG", true),
        ("application/json", false), ("image/png;q=0", false), ("image/jpeg", false),
    ] as [(String?, Bool)])
    func negotiationOfOneType(accept: String?, accepted: Bool) {
        let png = OutputFormat.raw(mediaType: "image/png")
        #expect(ContentNegotiation.format(accept: accept, offering: [("image/png", png)]) == (accepted ? png : nil))
    }

    @Test func onlyTextTypesAreCompressed() {
        for type in [
            "application/json", "application/x-ndjson", "text/csv; charset=utf-8", "text/html", "application/problem+json", "image/svg+xml",
            " Application/JSON ; charset=utf-8", "TEXT/plain", "application/xml", "application/javascript",
        ] {
            #expect(ContentCoding.compresses(contentType: type), "\(type)")
        }
        for type in [
            "image/png", "image/jpeg", "application/pdf", "application/octet-stream", "application/zip", "", "text", "application/jsonx",
            "application/json+zip", "image/png; note=text/", "application/ json",
        ] {
            #expect(!ContentCoding.compresses(contentType: type), "\(type)")
        }
    }

    private func status(_ error: any Error) -> (HTTPResponse.Status, String, HTTPFields) {
        let response = ErrorResponse(for: error)
        return (response.status, String(decoding: response.body, as: UTF8.self), response.headers)
    }

    @Test func databaseErrorsMapToStatusesWithoutMessages() {
        let secret = "SELECT password FROM users -- postgresql://admin:hunter2@db"
        let cases: [(DatabaseError.Code, HTTPResponse.Status)] = [
            (.poolExhausted, 503), (.connectionFailed, 503), (.connectionLost, 503), (.statementTimeout, 504),
            (.uniqueViolation, 409), (.constraintViolation, 422), (.invalidValue, 400), (.invalidSQL, 500),
            (.other, 500), (.readOnly, 500), (.serverReadOnly, 503), (.busy, 503),
        ]
        for (code, expected) in cases {
            let (status, body, headers) = self.status(DatabaseError(code, message: secret, sqlState: "42P01"))
            #expect(status == expected, "\(code)")
            #expect(!body.contains("hunter2") && !body.contains("SELECT") && !body.contains("42P01"))
            #expect(body.hasPrefix(#"{"error":""#))
            #expect((headers[.retryAfter] == "1") == (expected == .serviceUnavailable), "\(code)")
        }
    }

    @Test func otherErrors() {
        #expect(self.status(RowStreamError.noRow).0 == 404)
        #expect(self.status(RowStreamError.attachmentsNotAllowedInCSV).0 == 406)
        struct Secret: Error { var text = "password=hunter2" }
        let (status, body, _) = self.status(Secret())
        #expect(status == 500)
        #expect(body == #"{"error":"internal server error"}"#)
        #expect(self.status(HTTPError(status: 418, message: "teapot")).1 == #"{"error":"teapot"}"#)
    }
}
