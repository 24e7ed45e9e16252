import Foundation
import Logging
import Synchronization
import SpoutHTTP
import SpoutTestSupport
import Testing

/// What an outside attacker found in the HTTP layer (issue #59), through real sockets and the
/// real proxies users put in front: a request that asks for an upgrade must not leave its
/// connection deaf, a request must carry one `Host`, and every response says `nosniff`.
@Suite("HTTP hardening", .serialized)
struct HTTPHardeningTests {
    /// Counts the requests that reach `/smuggled`.
    final class Hits: Sendable {
        let count = Mutex(0)
    }

    /// A bare server (`/health`, `/slow`, `/smuggled`, `POST /echo`) on a free loopback port,
    /// for `body`.
    static func withServer(hits: Hits = Hits(), _ body: (Int) async throws -> Void) async throws {
        var router = Router()
        router.add(.get, "/slow") { _ in
            try await Task.sleep(for: .milliseconds(200))
            return .text("slow")
        }
        router.add(.get, "/smuggled") { _ in
            hits.count.withLock { $0 += 1 }
            return .text("smuggled")
        }
        router.add(.post, "/echo") { request in .bytes(request.body, contentType: "application/octet-stream") }
        let server = HTTPServer(
            router: router, configuration: ServerConfiguration(host: "127.0.0.1", port: 0, eventLoopThreads: 1),
            logger: Logger(label: "spout.test"))
        try await server.start()
        let port = try #require(server.boundPort)
        do {
            try await body(port)
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    static let upgrade = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n"

    @Test("a request asking for an upgrade is answered and its connection closed at once, not kept deaf")
    func upgradeCloses() async throws {
        try await Self.withServer { port in
            let answered = try await onThread { () -> (HTTPTestResponse, Bool, Duration) in
                let connection = try HTTPTestConnection(port: port, timeout: 15)
                let started = ContinuousClock.now
                try connection.send(Self.upgrade + "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                let response = try connection.readResponse()
                let rest = try connection.readUntilClosed()
                return (response, rest.isEmpty, ContinuousClock.now - started)
            }
            #expect(answered.0.status == 200)
            #expect(answered.0.header("connection") == "close")
            #expect(answered.1, "nothing follows the answer: the request after the upgrade is not read")
            #expect(answered.2 < .seconds(5), "the connection closes with its answer, not at the idle timeout")
            // CONNECT asks for a tunnel: the same.
            let connect = try await RawHTTP.send(port: port, Array("CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n".utf8), timeout: 10)
            #expect(connect.header("connection") == "close")
        }
    }

    @Test("behind a proxy that reuses its upstream connection, a client's upgrade request never stalls the next client", arguments: ThrowawayProxy.Kind.allCases)
    func upgradeBehindProxy(_ kind: ThrowawayProxy.Kind) async throws {
        try #require(ThrowawayProxy.isAvailable(kind), "\(kind.executable) is not installed")
        try await Self.withServer { port in
            try await ThrowawayProxy.with(kind, upstreamPort: port) { proxy in
                for round in 0..<3 {
                    let first = try await RawHTTP.send(port: proxy.port, Array(Self.upgrade.utf8), timeout: 15)
                    #expect(first.status == 200, "round \(round): \(first.status)")
                    let started = ContinuousClock.now
                    let next = try await RawHTTP.get(port: proxy.port, "/slow", timeout: 15)
                    #expect(next.status == 200 && next.text == "slow", "round \(round): \(next.status) \(next.text)")
                    #expect(ContinuousClock.now - started < .seconds(5), "round \(round): the next client waited for a deaf connection")
                }
            }
        }
    }

    @Test("a request with no Host, or two, is 400 and closes; HTTP/1.0 may leave it out", arguments: [
        ("GET /health HTTP/1.1\r\n\r\n", 400),
        ("GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        ("GET /health HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        ("GET /health HTTP/1.0\r\n\r\n", 200),
        ("GET /health HTTP/1.1\r\nHost: a\r\n\r\n", 200),
    ])
    func hostField(_ request: String, status: Int) async throws {
        try await Self.withServer { port in
            // "\r\n" is one Character: dropping one leaves the head open for one more field.
            let response = try await RawHTTP.send(port: port, Array((request.dropLast(1) + "Connection: close\r\n\r\n").utf8), timeout: 10)
            #expect(response.status == status, "\(response.status) \(response.text)")
            if status == 400 {
                #expect(response.text.contains("Host"), "\(response.text)")
                #expect(response.header("connection") == "close")
            }
        }
    }

    @Test("every response says X-Content-Type-Options: nosniff: answers, errors, and refusals before routing")
    func noSniff() async throws {
        try await Self.withServer { port in
            for request in [
                RawHTTP.request("GET", "/health"), RawHTTP.request("GET", "/missing"), RawHTTP.request("DELETE", "/health"),
                Array("GET /health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n".utf8),
            ] {
                let response = try await RawHTTP.send(port: port, request, timeout: 10)
                #expect(response.header("x-content-type-options") == "nosniff", "\(response.status)")
            }
        }
    }

    /// Requests whose framing two parsers could read two ways, each hiding `GET /smuggled`.
    static let smuggling: [(label: String, request: String)] = [
        ("Content-Length and Transfer-Encoding", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("two Content-Lengths", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 44\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("obfuscated Transfer-Encoding", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 44\r\nTransfer-Encoding: xchunked\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("Transfer-Encoding with a space before the colon", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\nContent-Length: 44\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("chunk size with junk", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0;x\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n0\r\n\r\n"),
    ]

    @Test("request smuggling, directly and through nginx and haproxy: the hidden request never reaches a route")
    func smuggling() async throws {
        let hits = Hits()
        try await Self.withServer(hits: hits) { port in
            var targets = [("direct", port)]
            var proxies: [ThrowawayProxy] = []
            defer { proxies.forEach { $0.stop() } }
            for kind in ThrowawayProxy.Kind.allCases where ThrowawayProxy.isAvailable(kind) {
                let proxy = try await ThrowawayProxy.start(kind, upstreamPort: port)
                proxies.append(proxy)
                targets.append((kind.rawValue, proxy.port))
            }
            for (target, targetPort) in targets {
                for (label, request) in Self.smuggling {
                    let answer = try await onThread {
                        try RawHTTP.exchange(port: targetPort, Array(request.utf8), timeout: 10, halfClose: true)
                    }
                    #expect((answer?.status ?? 400) < 500 || target != "direct", "\(target), \(label): \(answer?.status ?? 0)")
                    // A second request on the proxy's kept upstream connection must be its own.
                    let next = try await RawHTTP.get(port: targetPort, "/health", timeout: 10)
                    #expect(next.status == 200, "\(target), \(label): the next request got \(next.status)")
                }
            }
            #expect(hits.count.withLock { $0 } == 0, "a hidden request reached /smuggled")
        }
    }
}
