import SpoutCore
import SpoutHTTP
import SpoutTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Backpressure through a real socket, the path of a stream that cannot spool
/// (`SlowDownloadsTests` and `SpoolingSinkTests` cover the spool): the spool is off here. Once
/// a copy per database, now one test over both.
@Suite("HTTP server backpressure", .serialized)
struct ServerBackpressureTests {
    @Test("a slow reader keeps the server's buffers bounded and still gets every row", arguments: SQLDialect.allCases)
    func slowReaderKeepsServerBuffersBounded(_ dialect: SQLDialect) async throws {
        // A small kernel send buffer, so the slow phase reaches the channel's watermarks
        // instead of vanishing into the MiBs Linux would otherwise give the socket.
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.spool.isEnabled = false
        configuration.socketSendBufferSize = 32 * 1024
        let database = DatabaseConfiguration(maximumConnections: 2, acquireTimeout: .milliseconds(300))
        try await ServerFixture.with(dialect, configuration, database: database) { fixture, _ in
            let client = try await HTTPTestConnection.connect(port: fixture.port, receiveBufferSize: 16 * 1024)
            let response = try await client.run { client -> HTTPTestResponse in
                try client.send(RawHTTP.request("GET", "/big", close: false))
                // Read 1 KiB every 2 ms for the first 512 KiB, then the rest at full speed.
                var slowBytes = 0
                while slowBytes < 512 * 1024 {
                    guard try client.fill(atMost: 1024) else { break }
                    slowBytes += 1024
                    usleep(2000)
                }
                return try client.readResponse()
            }
            #expect(response.status == 200 && response.isChunked && response.isComplete)
            #expect(response.body.count > 7_000_000)
            let text = response.text
            #expect(text.hasSuffix(#"{"id":200000,"name":"employee-200000"}]"#))
            #expect(text.components(separatedBy: #""id":"#).count - 1 == 200_000)
            let statistics = fixture.server.statistics
            #expect(statistics.streamPauses > 0)
            #expect(statistics.maximumBufferedOutboundBytes > 0)
            #expect(statistics.maximumBufferedOutboundBytes < 512 * 1024)
        }
    }
}
