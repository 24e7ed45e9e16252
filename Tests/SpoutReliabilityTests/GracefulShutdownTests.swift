import Foundation
import SpoutCore
import SpoutTestDatabases
import SpoutTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `spout serve` receiving SIGTERM (or SIGINT, SIGHUP) while it streams.
@Suite("SIGTERM during streams")
struct GracefulShutdownTests {
    static let rows = 100_000

    @Test(
        "in-flight streams finish whole after SIGTERM or SIGHUP, new connections are refused, and the exit status is 0",
        arguments: [SIGTERM, SIGHUP])
    func drainsInFlight(signal: Int32) async throws {
        let database = TestDatabases.makeSQLiteDatabase()
        defer { database.drop() }
        try await onThread { _ = try SampleData.column(database.url, "SELECT 1") }
        let directory = try ServiceDirectory(
            databaseURL: database.url, extraEndpoints: ["streams.yaml": TestEndpoints.streams(.sqlite)], shipped: false,
            drainTimeoutSeconds: 60)
        defer { directory.remove() }
        let server = try await ServerProcess.serving(arguments: ["--config", directory.configFile, "--no-seed"])
        let port = server.port

        let readers = try await onThread {
            var readers: [SocketBox] = []
            for _ in 0..<3 {
                let socket = try RawSocket(port: port, timeout: 30, receiveBuffer: 16 * 1024)
                try socket.send(RawHTTP.request("GET", "/big?rows=\(Self.rows)"))
                try socket.receive(atLeast: 32 * 1024)
                readers.append(SocketBox(socket))
            }
            return readers
        }
        server.signal(signal)
        // The listener closes: new connections are refused (or closed unanswered).
        #expect(try await eventually {
            guard let socket = try? RawSocket(port: port, timeout: 5) else { return true }
            try? socket.send(RawHTTP.request("GET", "/health"))
            try? socket.receiveUntilClosed()
            return socket.received.isEmpty
        })
        #expect(server.isRunning, "the server exited before its in-flight responses finished")

        let responses = try await onThread {
            try readers.map { box in
                try box.socket.receiveUntilClosed()
                return try RawHTTP.parse(box.socket.received)
            }
        }
        for response in responses {
            #expect(response.status == 200 && response.isComplete)
            #expect(response.text.hasSuffix(#""id":\#(Self.rows),"pad":"\#(String(repeating: "0", count: 200))"}]"#))
        }
        let status = await server.waitForExit()
        #expect(status == 0, "exit status \(status.map(String.init) ?? "none"):\n\(server.log.suffix(3_000))")
        #expect(server.log.contains("shutting down") && server.log.contains("stopped"), "\(server.log)")
        await server.stop()
    }

    @Test("a signal the moment the server listens (a supervisor stopping a fresh instance) still shuts it down gracefully, exit status 0",
        arguments: [SIGTERM, SIGINT, SIGHUP])
    func signalAtOnce(_ signal: Int32) async throws {
        let database = TestDatabases.makeSQLiteDatabase()
        defer { database.drop() }
        try await onThread { _ = try SampleData.column(database.url, "SELECT 1") }
        let directory = try ServiceDirectory(
            databaseURL: database.url, extraEndpoints: ["streams.yaml": TestEndpoints.streams(.sqlite)], shipped: false)
        defer { directory.remove() }
        // The server logs that it listens before the service group runs: each start signalled
        // then, the way a rolling restart may.
        for start in 0..<3 {
            let server = try await ServerProcess.serving(arguments: ["--config", directory.configFile, "--no-seed"])
            server.signal(signal)
            let status = await server.waitForExit()
            #expect(status == 0, "start \(start): exit status \(status.map(String.init) ?? "none"):\n\(server.log.suffix(3_000))")
            #expect(server.log.contains("stopped"), "start \(start): \(server.log)")
            await server.stop()
        }
    }

    @Test("a stream that outlasts the drain timeout is cut (no terminating chunk) and the exit status is still 0")
    func drainTimeout() async throws {
        let database = TestDatabases.makeSQLiteDatabase()
        defer { database.drop() }
        try await onThread { _ = try SampleData.column(database.url, "SELECT 1") }
        let directory = try ServiceDirectory(
            databaseURL: database.url, extraEndpoints: ["streams.yaml": TestEndpoints.streams(.sqlite)], shipped: false,
            drainTimeoutSeconds: 1)
        defer { directory.remove() }
        let server = try await ServerProcess.serving(arguments: ["--config", directory.configFile, "--no-seed"])

        // A client that stops reading: its 440 MB stream cannot finish within a second.
        let box = try await onThread {
            let socket = try RawSocket(port: server.port, timeout: 60, receiveBuffer: 16 * 1024)
            try socket.send(RawHTTP.request("GET", "/big"))
            try socket.receive(atLeast: 32 * 1024)
            return SocketBox(socket)
        }
        server.signal(SIGTERM)
        let status = await server.waitForExit()
        #expect(status == 0, "exit status \(status.map(String.init) ?? "none"):\n\(server.log.suffix(3_000))")
        let response = try await onThread {
            try box.socket.receiveUntilClosed()
            return try RawHTTP.parse(box.socket.received)
        }
        #expect(response.status == 200)
        #expect(!response.isComplete, "a cut stream must not look complete")
        await server.stop()
    }
}
