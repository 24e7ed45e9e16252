import Foundation
import SpoutCore
import SpoutTestSupport
import Testing

/// A pool with no free connection, and statements that run too long, against `spout serve` in
/// a child process (its event loops and threads are its own, whatever else the test process runs).
@Suite("Pool exhaustion and statement timeouts")
struct PoolAndTimeoutTests {
    @Test("an exhausted pool answers 503 with Retry-After, never hangs, and serves again once a connection is free",
          arguments: [SQLDialect.postgres, .sqlite])
    func poolExhaustion(dialect: SQLDialect) async throws {
        try await self.withService(dialect, poolSize: 1, acquireTimeoutMs: 300) { service in
            // A client that stops reading keeps the only connection: its stream waits on it.
            let holder = try await onThread {
                let socket = try RawSocket(port: service.port, timeout: 30, receiveBuffer: 16 * 1024)
                try socket.send(RawHTTP.request("GET", "/big"))
                try socket.receive(atLeast: 1)
                return SocketBox(socket)
            }
            for _ in 0..<3 {
                let refused = try await service.get("/one", timeout: 15)
                #expect(refused.status == 503)
                #expect(refused.header("retry-after") == "1")
                #expect(refused.text == #"{"error":"pool exhausted"}"#)
            }
            // Health does not need the pool.
            #expect(try await service.get("/health", timeout: 15).status == 200)

            holder.socket.close(reset: true)
            #expect(try await eventually { try Self.status(service, "/one") == 200 }, "the connection never came back")
        }
    }

    @Test("a statement over its timeout is 504 and its connection serves the next request",
          arguments: [SQLDialect.postgres, .sqlite])
    func statementTimeout(dialect: SQLDialect) async throws {
        try await self.withService(dialect, poolSize: 1, acquireTimeoutMs: 5_000) { service in
            for _ in 0..<3 {
                let slow = try await service.get("/slow", timeout: 30)
                #expect(slow.status == 504)
                #expect(slow.text == #"{"error":"statement timeout"}"#)
                // The pool has one connection: this runs on the one that just timed out.
                let next = try await service.get("/one", timeout: 30)
                #expect(next.status == 200)
                #expect(next.text == #"{"one":1}"#)
            }
            // The timeout of /slow does not stick to the connection: a longer statement without
            // one still runs to its end.
            let hold = try await service.get("/hold?seconds=1", timeout: 30)
            #expect(hold.status == 200)
        }
    }

    private static func status(_ service: ServerProcess, _ target: String) throws -> Int {
        try RawHTTP.exchange(port: service.port, RawHTTP.request("GET", target), timeout: 15)?.status ?? 0
    }

    private func withService(
        _ dialect: SQLDialect, poolSize: Int, acquireTimeoutMs: Int, _ body: (ServerProcess) async throws -> Void
    ) async throws {
        try await StreamsService.with(
            dialect, prefix: "spout_rel_pool", extraEndpoints: ["slow.yaml": TestEndpoints.slow(dialect, timeoutMs: 300)],
            poolSize: poolSize, acquireTimeoutMs: acquireTimeoutMs, statementTimeoutMs: 0,
            // A stream that holds its connection while its client does not read is how these
            // tests exhaust the pool: the spool, which would release it, is off. The pool
            // alone: single rows would otherwise be read on the shared connections.
            environment: ["SPOUT_SPOOL_ENABLED": "false", "SPOUT_DATABASE_SHARED_READERS": "0"], body)
    }
}

/// Hands a socket from the thread that opened it to the test (used from one thread at a time).
final class SocketBox: @unchecked Sendable {
    // @unchecked: the socket is only touched by one thread at a time; the test hands it over
    // with the continuation that returns the box, which orders the accesses.
    let socket: RawSocket

    init(_ socket: RawSocket) {
        self.socket = socket
    }
}
