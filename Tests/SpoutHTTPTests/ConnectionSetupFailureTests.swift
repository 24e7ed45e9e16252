import Foundation
import Logging
import SpoutTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import SpoutHTTP

/// A connection that cannot be set up is closed and the reason is logged, once per cause.
///
/// The first round set a TCP option as a `SOL_SOCKET` option (`SO_DEBUG`), which an
/// unprivileged process may not set: every accepted connection was reset, with nothing in the
/// log. This test makes setup fail on purpose (an option no kernel knows, `ENOPROTOOPT` for
/// root and users alike) and checks the operator hears of it, without a line per connection.
@Suite struct ConnectionSetupFailureTests {
    @Test func aFailingSocketOptionIsLoggedOncePerCauseAndClosesTheConnection() async throws {
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0, eventLoopThreads: 1)
        configuration.additionalSocketOptions = [.init(level: SOL_SOCKET, name: 0x7fff, value: 1)]
        let store = LogStore()
        let logger = Logger(label: "spout.test", factory: { _ in RecordingLogHandler(store: store) })
        var router = Router()
        router.add(.get, "/hello") { _ in .text("hi", contentType: "text/plain") }
        let server = HTTPServer(router: router, configuration: configuration, logger: logger)
        try await server.start()
        let port = try #require(server.boundPort)

        for _ in 0..<5 {
            let answered = try await onThread { () throws -> Bool in
                let client = try HTTPTestConnection(port: port)
                try? client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                return (try? client.readUntilClosed(limit: 4096))?.isEmpty == false
            }
            #expect(!answered, "a connection whose setup failed must be closed without an answer")
        }
        await server.shutdown()

        let failures = store.all.filter { $0.level == .error && $0.metadata["connection.stage"] == "setup" }
        #expect(failures.count == 1, "logged once per cause, not once per connection: \(store.all.map(\.message))")
        #expect(failures.first?.message.contains("connection setup failed") == true)
        #expect(failures.first?.metadata["error"]?.contains("setsockopt") == true, "\(failures.first?.metadata ?? [:])")
    }

    @Test func laterFailuresOfTheSameCauseAreCountedAndReported() {
        let store = LogStore()
        let logger = Logger(label: "spout.test", factory: { _ in RecordingLogHandler(store: store) })
        struct Refused: Error, CustomStringConvertible { var description: String { "EACCES" } }
        struct Other: Error, CustomStringConvertible { var description: String { "EMFILE" } }

        let quiet = ConnectionFailureLog(logger: logger, interval: .seconds(3600))
        for _ in 0..<10 { quiet.record(Refused(), stage: "setup") }
        quiet.record(Other(), stage: "accept")
        #expect(store.all.count == 2, "one line per cause")

        let store2 = LogStore()
        let eager = ConnectionFailureLog(
            logger: Logger(label: "spout.test", factory: { _ in RecordingLogHandler(store: store2) }), interval: .zero)
        eager.record(Refused(), stage: "setup")
        eager.record(Refused(), stage: "setup")
        #expect(store2.all.count == 2, "after the interval the cause is logged again")
    }

    @Test func theConfiguredSocketOptionsLeaveConnectionsWorking() async throws {
        // SO_SNDBUF and the defaults configure the connection without an error.
        let store = LogStore()
        let logger = Logger(label: "spout.test", factory: { _ in RecordingLogHandler(store: store) })
        var router = Router()
        router.add(.get, "/hello") { _ in .text("hi", contentType: "text/plain") }
        let server = HTTPServer(
            router: router,
            configuration: ServerConfiguration(host: "127.0.0.1", port: 0, eventLoopThreads: 1, socketSendBufferSize: 64 * 1024),
            logger: logger)
        try await server.start()
        let port = try #require(server.boundPort)
        let response = try await onThread { () throws -> HTTPTestResponse in
            let client = try HTTPTestConnection(port: port)
            try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            return try client.readResponse()
        }
        await server.shutdown()
        #expect(response.status == 200)
        #expect(store.all.allSatisfy { $0.level < .error })
    }
}
