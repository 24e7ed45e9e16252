import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOPosix
import SpoutCore
import SpoutEndpoints
import SpoutTestDatabases
import SpoutTestSupport
import Synchronization
import Testing

@testable import SpoutHTTP

#if canImport(Glibc)
import Glibc
#endif

/// Work hopped "onto the event loop" from other threads, run by the test on the thread that
/// owns the `EmbeddedEventLoop`.
final class HopQueue: Sendable {
    private let work = Mutex<[@Sendable () -> Void]>([])

    var hop: LoopHop { LoopHop { task in self.work.withLock { $0.append(task) } } }

    var isEmpty: Bool { self.work.withLock { $0.isEmpty } }

    /// Runs everything queued, including work queued while running.
    func runAll() {
        while true {
            let batch = self.work.withLock { work -> [@Sendable () -> Void] in
                defer { work.removeAll() }
                return work
            }
            if batch.isEmpty { return }
            for task in batch { task() }
        }
    }
}


@Suite("Streaming handler (EmbeddedChannel)", .serialized)
struct StreamingHandlerTests {
    static let rowCount = 20_000

    private final class Fixture {
        let temporary = TestDatabases.makeSQLiteDatabase()
        let database: Database
        let queue = HopQueue()
        let channel: EmbeddedChannel
        let handler: HTTPConnectionHandler
        var parts: [HTTPServerResponsePart] = []

        init() throws {
            self.database = try self.temporary.open(DatabaseConfiguration(maximumConnections: 1, acquireTimeout: .milliseconds(100)))
            try self.database.withConnection(readOnly: false) { connection in
                try connection.executeScript(
                    """
                    CREATE TABLE t(n INTEGER PRIMARY KEY, label TEXT NOT NULL);
                    WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < \(StreamingHandlerTests.rowCount))
                    INSERT INTO t SELECT x, 'row-' || x FROM c;
                    """
                )
            }
            var router = Router()
            let database = self.database
            router.add(.get, "/rows") { _ in
                .rows(try database.query("SELECT n, label FROM t ORDER BY n"), database: database)
            }
            router.add(.get, "/small") { _ in
                .rows(try database.query("SELECT n, label FROM t WHERE n <= 3 ORDER BY n"), database: database)
            }
            router.add(.get, "/none") { _ in
                .rows(try database.query("SELECT n FROM t WHERE n < 0"), database: database, shape: .object)
            }
            let queue = self.queue
            let environment = ConnectionEnvironment(
                router: router, configuration: ServerConfiguration(),
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), statistics: ServerStatistics(),
                makeHop: { _ in queue.hop }
            )
            self.handler = HTTPConnectionHandler(environment: environment, arrival: RequestArrivalClock())
            self.channel = EmbeddedChannel(handler: self.handler)
        }

        func send(_ uri: String) throws {
            try self.channel.writeInbound(HTTPServerRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: uri, headers: ["Host": "x"])))
            try self.channel.writeInbound(HTTPServerRequestPart.end(nil))
        }

        /// Runs hopped work and collects what the handler wrote.
        func pump() throws {
            self.queue.runAll()
            while let part = try self.channel.readOutbound(as: HTTPServerResponsePart.self) {
                self.parts.append(part)
            }
        }

        var bodyParts: [ByteBuffer] {
            self.parts.compactMap { part in
                if case .body(.byteBuffer(let buffer)) = part { return buffer }
                return nil
            }
        }

        var head: HTTPResponseHead? {
            for case .head(let head) in self.parts { return head }
            return nil
        }

        var isEnded: Bool {
            self.parts.contains { if case .end = $0 { return true } else { return false } }
        }

        var bodyText: String {
            var all = ByteBuffer()
            for var buffer in self.bodyParts { all.writeBuffer(&buffer) }
            return String(buffer: all)
        }

        /// Whether the only pooled connection can be leased (the stream's lease was returned).
        func leaseIsAvailable() -> Bool {
            guard let lease = try? self.database.leaseSoon(readOnly: true) else { return false }
            lease.release()
            return true
        }

        /// Ends the channel: nothing may be left in it (no part written and not read, no
        /// inbound data unread, no pending work).
        func close() throws {
            let leftOver = try self.channel.finish(acceptAlreadyClosed: true)
            #expect(leftOver.isClean, "the channel ends with \(leftOver)")
            self.database.close()
            self.temporary.drop()
        }
    }

    @Test func producerPausesWhileTheChannelIsNotWritable() throws {
        let fixture = try Fixture()
        defer { try? fixture.close() }
        try fixture.send("/rows")

        try waitUntil("the first chunk arrives", step: fixture.pump) { !fixture.bodyParts.isEmpty }
        let head = try #require(fixture.head)
        #expect(head.status == .ok)
        #expect(head.headers["content-length"].isEmpty)
        #expect(head.headers["content-type"] == ["application/json"])

        fixture.channel.isWritable = false
        fixture.channel.pipeline.fireChannelWritabilityChanged()
        let sink = try #require(fixture.handler.activeSink)
        try waitUntil("the producer blocks", step: fixture.pump) { sink.snapshot.isWaitingForWritability }

        // Blocked: everything it handed over has been written and nothing more is queued.
        try fixture.pump()
        let paused = sink.snapshot
        #expect(paused.isWaitingForWritability)
        #expect(fixture.queue.isEmpty)
        #expect(fixture.bodyParts.count == paused.chunkCount)
        #expect(paused.finishedRest == nil)
        #expect(!fixture.isEnded)
        #expect(paused.byteCount < 400_000)  // far from the whole body

        fixture.channel.isWritable = true
        fixture.channel.pipeline.fireChannelWritabilityChanged()
        try waitUntil("the response ends", step: fixture.pump) { fixture.isEnded }

        #expect(sink.snapshot.pauses >= 1)
        #expect(fixture.bodyParts.count > paused.chunkCount)
        let text = fixture.bodyText
        #expect(text.hasPrefix(#"[{"n":1,"label":"row-1"}"#))
        #expect(text.hasSuffix(#"{"n":\#(Self.rowCount),"label":"row-\#(Self.rowCount)"}]"#))
        #expect(text.split(separator: "},{").count == Self.rowCount)
        #expect(fixture.leaseIsAvailable())
    }

    @Test func smallResultIsSentWholeWithContentLength() throws {
        let fixture = try Fixture()
        defer { try? fixture.close() }
        try fixture.send("/small")
        try waitUntil("the response ends", step: fixture.pump) { fixture.isEnded }
        let head = try #require(fixture.head)
        let body = fixture.bodyText
        #expect(head.headers["content-length"] == [String(body.utf8.count)])
        #expect(fixture.bodyParts.count == 1)
        #expect(body == #"[{"n":1,"label":"row-1"},{"n":2,"label":"row-2"},{"n":3,"label":"row-3"}]"#)
    }

    @Test func noRowBeforeTheFirstByteIs404() throws {
        let fixture = try Fixture()
        defer { try? fixture.close() }
        try fixture.send("/none")
        try waitUntil("the response ends", step: fixture.pump) { fixture.isEnded }
        #expect(fixture.head?.status == .notFound)
        #expect(fixture.bodyText == #"{"error":"not found"}"#)
    }

    @Test func closingTheChannelStopsTheProducer() throws {
        let fixture = try Fixture()
        defer { try? fixture.close() }
        try fixture.send("/rows")
        try waitUntil("the first chunk arrives", step: fixture.pump) { !fixture.bodyParts.isEmpty }
        fixture.channel.isWritable = false
        fixture.channel.pipeline.fireChannelWritabilityChanged()
        let sink = try #require(fixture.handler.activeSink)
        try waitUntil("the producer blocks", step: fixture.pump) { sink.snapshot.isWaitingForWritability }

        try fixture.channel.close().wait()
        try waitUntil("the lease is returned", step: fixture.pump) {
            fixture.leaseIsAvailable()
        }
        #expect(sink.snapshot.isClosed)
        #expect(!fixture.isEnded)
    }
}
