import Foundation
import Synchronization
import Testing

@testable import SpoutClient

/// A consumer that pauses stops the server, one that leaves closes the connection, and a
/// silent server times out when asked to.
@Suite struct BackpressureTests {
    struct Padded: Decodable {
        var n: Int
        var pad: String
    }

    /// What the flooding server did: bytes handed to the socket, whether a write threw, and
    /// whether it is waiting in a write it began on a connection that took no more (the
    /// client's backpressure, as the server sees it).
    final class Progress: Sendable {
        let sent = Mutex(0)
        let failed = Mutex(false)
        /// Whether a write is under way, and the connection it writes to.
        let writing = Mutex<(inWrite: Bool, connection: ScriptedConnection?)>((false, nil))

        var bytesSent: Int { self.sent.withLock { $0 } }
        var writeFailed: Bool { self.failed.withLock { $0 } }
        /// A write is under way on a connection that takes no more: the server waits.
        var isWaitingForTheClient: Bool {
            self.writing.withLock { $0.inWrite && $0.connection?.isWritable == false }
        }
    }

    /// Rows of about 10 KB.
    static let padding = String(repeating: "x", count: 10_000)
    static let rowCount = 4_000

    /// A server that writes `rowCount` rows of 10 KB (40 MB), one chunk each, as fast as the
    /// connection takes them, recording its ``Progress``.
    static func startFloodingServer(_ progress: Progress) async throws -> ScriptedHTTPServer {
        try await ScriptedHTTPServer.start { _, connection in
            do {
                try await connection.sendChunkedHead()
                for n in 0..<Self.rowCount {
                    let row = (n == 0 ? "[" : ",") + #"{"n":\#(n),"pad":"\#(Self.padding)"}"# + (n == Self.rowCount - 1 ? "]" : "")
                    progress.writing.withLock { $0 = (true, connection) }
                    try await connection.sendChunk(row)
                    progress.writing.withLock { $0.inWrite = false }
                    progress.sent.withLock { $0 += row.utf8.count }
                }
                try await connection.sendLastChunk()
            } catch {
                progress.failed.withLock { $0 = true }
            }
        }
    }

    @Test func aPausedConsumerStopsTheServerAndThenGetsEveryRow() async throws {
        let progress = Progress()
        let server = try await Self.startFloodingServer(progress)
        let client = SpoutClient(baseURL: try #require(URL(string: "http://127.0.0.1:\(server.port)")))
        var iterator = try await client.rows(Padded.self, path: "/flood").makeAsyncIterator()
        #expect(try await iterator.next()?.n == 0)

        // The consumer pauses: the server must come to wait for it once the socket buffers are
        // full (the event, seen by the server), far before the end of the body.
        let total = Self.rowCount * (Self.padding.count + 20)
        let deadline = ContinuousClock.now + .seconds(30)
        while !progress.isWaitingForTheClient && progress.bytesSent < total && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        let stalledAt = progress.bytesSent
        print("SpoutClientTests: a paused consumer stalled the server after \(stalledAt / 1024) KiB of \(total / 1024) KiB")
        #expect(progress.isWaitingForTheClient, "the server never waited for a consumer that read one row")
        #expect(stalledAt < total / 2, "the server sent \(stalledAt) bytes to a consumer that read one row")

        var count = 1
        while let row = try await iterator.next() {
            #expect(row.n == count)
            count += 1
        }
        #expect(count == Self.rowCount)
        #expect(!progress.writeFailed)
        await server.stop()
    }

    @Test func leavingTheLoopClosesTheConnection() async throws {
        let progress = Progress()
        let server = try await Self.startFloodingServer(progress)
        let client = SpoutClient(baseURL: try #require(URL(string: "http://127.0.0.1:\(server.port)")))
        for try await row in try await client.rows(Padded.self, path: "/flood") where row.n == 2 {
            break
        }
        // The server's next writes fail once the client's socket is gone.
        let deadline = ContinuousClock.now + .seconds(10)
        while !progress.writeFailed && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(progress.writeFailed, "the server could still write after the consumer left")
        await server.stop()
    }

    @Test func cancellingTheReadingTaskThrowsCancellation() async throws {
        let (release, releaser) = AsyncStream<Void>.makeStream()
        let server = try await ScriptedHTTPServer.start { _, connection in
            try await connection.sendChunkedHead()
            try await connection.sendChunk(#"[{"n":1,"pad":""},"#)
            for await _ in release { break }
        }
        let client = SpoutClient(baseURL: try #require(URL(string: "http://127.0.0.1:\(server.port)")))
        let (firstRow, firstRowSeen) = AsyncStream<Void>.makeStream()
        let reader = Task {
            for try await _ in try await client.rows(Padded.self, path: "/held") {
                firstRowSeen.yield()
            }
        }
        for await _ in firstRow { break }
        reader.cancel()
        await #expect(throws: CancellationError.self) { try await reader.value }
        releaser.finish()
        await server.stop()
    }

    @Test func aSilentServerTimesOutWhenAReadTimeoutIsSet() async throws {
        let (release, releaser) = AsyncStream<Void>.makeStream()
        let server = try await ScriptedHTTPServer.start { request, connection in
            if request.target == "/mid-body" {
                try await connection.sendChunkedHead()
                try await connection.sendChunk(#"[{"n":1,"pad":""},"#)
            }
            for await _ in release { break }
        }
        let client = SpoutClient(
            baseURL: try #require(URL(string: "http://127.0.0.1:\(server.port)")),
            // Two seconds, not less: on a loaded shared machine a new connection's head can take
            // a few hundred milliseconds even from a server that answers at once.
            transport: NIOHTTPTransport(readTimeout: .seconds(2)))
        await #expect(throws: SpoutClientError.self) {
            _ = try await client.rows(Padded.self, path: "/no-head")
        }
        let rows = try await client.rows(Padded.self, path: "/mid-body")
        var iterator = rows.makeAsyncIterator()
        #expect(try await iterator.next()?.n == 1)
        // A pause of the consumer's own is not a timeout: the row after it is the server's.
        try await Task.sleep(for: .seconds(3))
        do {
            _ = try await iterator.next()
            Issue.record("a server silent mid-body must time out")
        } catch SpoutClientError.timedOut(let reason) {
            #expect(reason.contains("body"))
        }
        releaser.finish()
        await server.stop()
    }
}
