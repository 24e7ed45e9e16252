import NIOCore

/// The server's side of one connection, for the test to write to.
struct ScriptedConnection: Sendable {
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    let channel: any Channel

    /// Whether the connection takes more now: false once the client stopped reading and the
    /// socket's buffers and the channel's high watermark are full (a write then waits).
    var isWritable: Bool { self.channel.isWritable }

    /// Writes `text` as it is.
    func send(_ text: String) async throws {
        try await self.outbound.write(ByteBuffer(string: text))
    }

    /// A response head with `Transfer-Encoding: chunked` and the given extra header lines.
    func sendChunkedHead(status: String = "200 OK", headers: [String] = []) async throws {
        let lines = ["HTTP/1.1 \(status)", "Content-Type: application/json", "Transfer-Encoding: chunked"] + headers
        try await self.send(lines.joined(separator: "\r\n") + "\r\n\r\n")
    }

    /// One chunk of a chunked body.
    func sendChunk(_ text: String) async throws {
        try await self.send(String(text.utf8.count, radix: 16) + "\r\n" + text + "\r\n")
    }

    /// The terminating zero-length chunk.
    func sendLastChunk() async throws {
        try await self.send("0\r\n\r\n")
    }

    /// A whole response with `Content-Length`.
    func sendResponse(status: String = "200 OK", headers: [String] = [], body: String) async throws {
        let lines = ["HTTP/1.1 \(status)", "Content-Length: \(body.utf8.count)"] + headers
        try await self.send(lines.joined(separator: "\r\n") + "\r\n\r\n" + body)
    }
}
