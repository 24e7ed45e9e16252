import Foundation
import SpoutCore
import SpoutHTTP
import SpoutTestDatabases
import SpoutTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Slowloris, with the default configuration: thousands of connections from one host that
/// trickle request heads (or bodies) must not keep another host from being served.
///
/// The first round filled `maxConnections` with 1,024 such connections and answered every
/// other client 503 until the idle timeout closed them. Now a head must arrive within
/// `headTimeoutSeconds` (10) of its first byte, a body within `bodyTimeoutSeconds` (30), and one
/// address holds at most `maxConnectionsPerAddress` (32) connections.
@Suite("Slowloris and trickled bodies")
struct SlowlorisTests {
    static let attackSeconds = 40.0
    static let connectionsPerAttacker = 2_000

    @Test("2,000 trickling heads from 127.0.0.2 and 2,000 trickling bodies from 127.0.0.3 for 40 s; 127.0.0.1 gets 200s within 2 s throughout")
    func slowlorisDoesNotDenyService() async throws {
        // The test process holds about 4,000 sockets.
        OpenFileLimit.raiseSoftLimitToHardLimit()
        let database = TestDatabases.makeSQLiteDatabase()
        try await onThread { _ = try SampleData.column(database.url, "SELECT 1") }
        defer { database.drop() }
        let directory = try ServiceDirectory(
            databaseURL: database.url, extraEndpoints: ["streams.yaml": TestEndpoints.streams(.sqlite)], shipped: false)
        defer { directory.remove() }
        let service = try await ServerProcess.serving(arguments: ["--config", directory.configFile, "--no-seed"])
        let port = service.port

        // The attackers block on sockets and sleeps: each runs on a thread of its own, never on
        // one of the (two, on two cores) cooperative threads the test itself needs.
        let stop = StopFlag()
        let heads = Task {
            try await onThread {
                Trickler(port: port, source: "127.0.0.2", kind: .head, connections: Self.connectionsPerAttacker).run(until: stop)
            }
        }
        let bodies = Task {
            try await onThread {
                Trickler(port: port, source: "127.0.0.3", kind: .body, connections: Self.connectionsPerAttacker).run(until: stop)
            }
        }

        // The legitimate client: a request every 250 ms, each on a new connection.
        var latencies: [Duration] = []
        var failures: [String] = []
        let end = ContinuousClock.now + .seconds(Self.attackSeconds)
        while ContinuousClock.now < end {
            let started = ContinuousClock.now
            let status = try await onThread { () -> Int in
                (try? RawHTTP.exchange(port: port, RawHTTP.request("GET", "/one"), timeout: 2))??.status ?? 0
            }
            let latency = ContinuousClock.now - started
            latencies.append(latency)
            if status != 200 || latency > .seconds(2) { failures.append("status \(status) after \(latency)") }
            try await Task.sleep(for: .milliseconds(250))
        }
        stop.set()
        let headOutcome = try await heads.value
        let bodyOutcome = try await bodies.value
        let log = service.log
        await service.stop()

        print("slowloris: \(latencies.count) requests from 127.0.0.1, slowest \(latencies.max() ?? .zero); heads \(headOutcome); bodies \(bodyOutcome)")
        #expect(latencies.count > 100)
        #expect(failures.isEmpty, "the legitimate client was not served: \(failures.prefix(10))")
        // The attackers were held off by the per-address cap, and what got in was closed by
        // the timeouts (and the attackers came back).
        #expect(headOutcome.refused > 0 && bodyOutcome.refused > 0)
        #expect(headOutcome.closedSilently > 0, "no trickling head was cut off: \(headOutcome)")
        #expect(bodyOutcome.answered408 > 0, "no trickling body was answered 408: \(bodyOutcome)")
        let headTimeouts = log.components(separatedBy: "request head timeout").count - 1
        #expect(headTimeouts >= 32, "head timeouts logged: \(headTimeouts)")
        #expect(log.contains("http.status=408"))
    }
}

/// One attacking host: keeps up to `connections` connections open to the server, each sending
/// a request head (or a POST head and then its body) one line (one byte) every two seconds, and
/// opens new ones as the server closes them.
struct Trickler: Sendable {
    enum Kind: Sendable { case head, body }

    struct Outcome: Sendable, CustomStringConvertible {
        /// Connections answered at once (503: the per-address cap).
        var refused = 0
        /// Connections closed by the server without any answer after a while (head timeout).
        var closedSilently = 0
        var answered408 = 0
        var opened = 0

        var description: String {
            "opened \(self.opened), refused \(self.refused), closed silently \(self.closedSilently), 408 \(self.answered408)"
        }
    }

    let port: Int
    let source: String
    let kind: Kind
    let connections: Int

    func run(until stop: StopFlag) -> Outcome {
        var outcome = Outcome()
        var open: [(fd: Int32, opened: ContinuousClock.Instant)] = []
        var lastTrickle = ContinuousClock.now
        while !stop.isSet {
            // Top up, a few hundred per round so the server sees a steady stream of attempts.
            var added = 0
            while open.count < self.connections && added < 200 {
                guard let fd = try? LoopbackSocket.connect(port: self.port, timeout: 2, sourceAddress: self.source) else { break }
                let start = self.kind == .head
                    ? "GET /one HTTP/1.1\r\nHost: victim\r\n"
                    : "POST /one HTTP/1.1\r\nHost: victim\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n"
                _ = Self.send(fd, start)
                open.append((fd, .now))
                outcome.opened += 1
                added += 1
            }
            let trickle = ContinuousClock.now - lastTrickle >= .seconds(2)
            if trickle { lastTrickle = .now }
            // Reap what the server closed or answered; trickle on the rest.
            open.removeAll { connection in
                var buffer = [UInt8](repeating: 0, count: 512)
                let count = buffer.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                let wouldBlock = count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
                if !wouldBlock {
                    let text = count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : ""
                    if text.hasPrefix("HTTP/1.1 503") {
                        outcome.refused += 1
                    } else if text.hasPrefix("HTTP/1.1 408") {
                        outcome.answered408 += 1
                    } else if count <= 0 && ContinuousClock.now - connection.opened > .seconds(5) {
                        outcome.closedSilently += 1
                    }
                    Glibc.close(connection.fd)
                    return true
                }
                if trickle { _ = Self.send(connection.fd, self.kind == .head ? "X-Trickle: 1\r\n" : "x") }
                return false
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        for connection in open { Glibc.close(connection.fd) }
        return outcome
    }

    private static func send(_ fd: Int32, _ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) } == bytes.count
    }
}

/// A flag one task sets and others poll.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { self.value.load(ordering: .relaxed) }

    func set() {
        self.value.store(true, ordering: .relaxed)
    }
}
