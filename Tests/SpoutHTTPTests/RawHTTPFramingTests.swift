import SpoutTestSupport
import Testing

/// The test kit's raw client decides where a response ends and what its body is; every socket
/// test's verdict rests on that, so its framing is checked here on bytes, without a server.
@Suite struct RawHTTPFramingTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func aContentLengthBodyEndsAfterItsLength() throws {
        let response = Self.bytes("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello")
        #expect(RawHTTP.responseEnd(in: Array(response.dropLast())) == nil)
        #expect(RawHTTP.responseEnd(in: response) == response.count)
        let parsed = try RawHTTP.parse(response)
        #expect(parsed.status == 200 && parsed.text == "hello" && parsed.isComplete && !parsed.isChunked)
        #expect(parsed.header("x-a") == "b" && parsed.header("X-A") == "b")
    }

    @Test func aChunkedBodyEndsAfterItsLastChunkAndTrailers() throws {
        let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        let complete = Self.bytes(head + "3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nX-Checksum: 42\r\n\r\n")
        // Every prefix short of the final empty line is incomplete.
        for cut in 1..<complete.count - head.utf8.count {
            #expect(RawHTTP.responseEnd(in: Array(complete.dropLast(cut))) == nil, "cut \(cut)")
        }
        #expect(RawHTTP.responseEnd(in: complete) == complete.count)
        let parsed = try RawHTTP.parse(complete)
        #expect(parsed.text == "abcde" && parsed.isChunked && parsed.isComplete)
        #expect(parsed.trailer("x-checksum") == "42")
    }

    /// A reader's framer sees its buffer grow a few bytes at a time and resumes where it
    /// stopped; it must find the same end as a look at the whole buffer, and no earlier.
    @Test(arguments: [1, 2, 5, 7, 64])
    func aFramerFedInPiecesEndsWhereTheWholeResponseEnds(step: Int) throws {
        let chunks = (1...40).map { index in String(repeating: "x", count: index * 3) }
        let body = chunks.map { String($0.utf8.count, radix: 16) + "\r\n" + $0 + "\r\n" }.joined()
        let response = Self.bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body + "0\r\nX-T: 1\r\n\r\n")
        let next = Self.bytes("HTTP/1.1 204 No Content\r\n\r\n")
        let buffer = response + next
        var framer = RawHTTP.Framer()
        var seen = 0
        var end: Int?
        while end == nil && seen < buffer.count {
            seen = min(seen + step, buffer.count)
            end = framer.end(in: Array(buffer[0..<seen]))
            if seen < response.count { #expect(end == nil, "ended at \(seen) of \(response.count)") }
        }
        #expect(end == response.count)
        #expect(RawHTTP.responseEnd(in: buffer) == response.count)
        let parsed = try RawHTTP.parse(response)
        #expect(parsed.text == chunks.joined() && parsed.trailer("x-t") == "1")
    }

    @Test func aChunkedBodyCutShortIsIncomplete() throws {
        let parsed = try RawHTTP.parse(Self.bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4\r\nde"))
        #expect(parsed.text == "abcde" && !parsed.isComplete)
    }

    @Test func aBodyFramedByClosingNeverEndsBeforeTheClose() throws {
        let response = Self.bytes("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it")
        #expect(RawHTTP.responseEnd(in: response) == nil)
        let parsed = try RawHTTP.parse(response)
        #expect(parsed.text == "all of it" && parsed.isComplete)
    }

    @Test func headAnd304And204HaveNoBody() throws {
        let head = Self.bytes("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n")
        #expect(RawHTTP.responseEnd(in: head, isHead: true) == head.count)
        #expect(RawHTTP.responseEnd(in: head) == nil)
        let notModified = Self.bytes("HTTP/1.1 304 Not Modified\r\nETag: \"a\"\r\n\r\n")
        #expect(RawHTTP.responseEnd(in: notModified) == notModified.count)
        #expect(try RawHTTP.parse(notModified).body.isEmpty)
    }

    @Test func pipelinedResponsesEndOneAtATime() throws {
        let first = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]"
        let second = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n1\r\n0\r\n\r\n"
        let both = Self.bytes(first + second)
        let end = try #require(RawHTTP.responseEnd(in: both))
        #expect(end == first.utf8.count)
        #expect(RawHTTP.responseEnd(in: Array(both[end...])) == second.utf8.count)
    }

    @Test func aBadStatusLineIsAnError() {
        #expect(throws: RawSocket.Failure.self) { try RawHTTP.parse(Self.bytes("SSH-2.0-OpenSSH\r\n\r\n")) }
    }

    @Test func requestsSayCloseUnlessAskedNot() {
        let closing = String(decoding: RawHTTP.request("POST", "/pets", headers: [("A", "b")], body: Array("{}".utf8)), as: UTF8.self)
        #expect(closing == "POST /pets HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nA: b\r\nContent-Length: 2\r\n\r\n{}")
        let kept = String(decoding: RawHTTP.request("GET", "/x", close: false), as: UTF8.self)
        #expect(kept == "GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    }
}
