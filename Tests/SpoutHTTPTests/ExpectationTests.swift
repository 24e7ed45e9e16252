import Foundation
import Logging
import SpoutTestSupport
import Testing

@testable import SpoutHTTP

/// `Expect: 100-continue` (RFC 9110 §10.1.1) through a real socket: a client that waits for
/// `100 Continue` before it sends a body gets it as soon as the head is read, unless the body
/// is refused already (413); other expectations are 417. curl waits for it on uploads above
/// 1 MiB, a second by default, then sends anyway: without the interim answer every such upload
/// was a second late.
@Suite("Expect: 100-continue")
struct ExpectationTests {
    static func withEchoServer(_ body: @Sendable (Int) async throws -> Void) async throws {
        var router = Router()
        router.add(.post, "/echo") { request in .bytes(request.body, contentType: "application/octet-stream") }
        router.add(.get, "/hello") { _ in .text("hi") }
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0, eventLoopThreads: 1)
        configuration.maximumBodySize = 4 * 1024 * 1024
        let server = HTTPServer(
            router: router, configuration: configuration, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        try await server.start()
        do {
            try await body(try #require(server.boundPort))
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    static func head(_ length: Int, expect: String, version: String = "HTTP/1.1") -> String {
        "POST /echo \(version)\r\nHost: x\r\nExpect: \(expect)\r\nContent-Length: \(length)\r\n\r\n"
    }

    @Test("100 Continue comes before the body is sent; then the answer, and the connection stays open")
    func continueBeforeTheBody() async throws {
        try await Self.withEchoServer { port in
            let (interim, final, next) = try await onThread { () throws -> (HTTPTestResponse, HTTPTestResponse, HTTPTestResponse) in
                // A short timeout: without the interim answer the read below fails instead of waiting.
                let client = try HTTPTestConnection(port: port, timeout: 5)
                try client.send(Self.head(5, expect: "100-Continue"))
                let interim = try client.readResponse()
                try client.send("hello")
                let final = try client.readResponse()
                try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                return (interim, final, try client.readResponse())
            }
            #expect(interim.status == 100 && interim.body.isEmpty)
            #expect(final.status == 200 && final.text == "hello")
            #expect(next.status == 200 && next.text == "hi")
        }
    }

    @Test("a body over the limit is refused at once (413, no 100), and an unknown expectation is 417; both close")
    func refusals() async throws {
        try await Self.withEchoServer { port in
            let (tooLarge, unknown) = try await onThread { () throws -> (HTTPTestResponse, HTTPTestResponse) in
                let first = try HTTPTestConnection(port: port, timeout: 5)
                try first.send(Self.head(5 * 1024 * 1024, expect: "100-continue"))
                let tooLarge = try first.readResponse()
                let second = try HTTPTestConnection(port: port, timeout: 5)
                try second.send(Self.head(5, expect: "fast-please"))
                return (tooLarge, try second.readResponse())
            }
            #expect(tooLarge.status == 413 && tooLarge.header("Connection") == "close")
            #expect(unknown.status == 417 && unknown.header("Connection") == "close")
            #expect(unknown.text == #"{"error":"only Expect: 100-continue is supported"}"#)
        }
    }

    @Test("without a body, or from HTTP/1.0, there is nothing to continue: the final answer only")
    func nothingToContinue() async throws {
        try await Self.withEchoServer { port in
            let (empty, old) = try await onThread { () throws -> (HTTPTestResponse, HTTPTestResponse) in
                let first = try HTTPTestConnection(port: port, timeout: 5)
                try first.send(Self.head(0, expect: "100-continue"))
                let empty = try first.readResponse()
                let second = try HTTPTestConnection(port: port, timeout: 5)
                try second.send(Self.head(2, expect: "100-continue", version: "HTTP/1.0") + "hi")
                return (empty, try second.readResponse())
            }
            #expect(empty.status == 200 && empty.body.isEmpty)
            #expect(old.status == 200 && old.text == "hi")
        }
    }

    @Test("curl uploading 2 MB gets 100 Continue and sends the file", .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/curl")))
    func curlUpload() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("spout-expect-\(UUID().uuidString).bin")
        let bytes = (0..<2_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        try await Self.withEchoServer { port in
            let (output, trace) = try await onThread { () throws -> (Data, String) in
                let curl = Process()
                curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
                curl.arguments = ["-sv", "-X", "POST", "-T", file.path, "http://127.0.0.1:\(port)/echo"]
                let out = Pipe()
                let err = Pipe()
                curl.standardOutput = out
                curl.standardError = err
                try curl.run()
                let output = out.fileHandleForReading.readDataToEndOfFile()
                let trace = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                curl.waitUntilExit()
                return (output, trace)
            }
            #expect(trace.contains("Expect: 100-continue"), "curl asked to wait")
            #expect(trace.contains("< HTTP/1.1 100 Continue"), "\(trace.suffix(2000))")
            #expect(Array(output) == bytes)
        }
    }
}
