import Dispatch
import NIOCore
import Synchronization
import Testing

@testable import SpoutEndpoints
@testable import SpoutHTTP

/// ``NoticeSubscriber`` on a sink whose channel the test makes writable or not: notices that
/// wait coalesce into one, nothing waits on a slow client, and one too slow is dropped.
@Suite("Live notice subscribers")
struct NoticeSubscriberTests {
    /// A channel standing in for a connection: a serial queue for its event loop, the bytes it
    /// was handed, and a writability the test sets.
    final class Channel: Sendable {
        let loop = DispatchQueue(label: "notice test loop")
        private let state = Mutex((writable: true, received: [UInt8]()))

        var text: String { self.loop.sync { String(decoding: self.state.withLock { $0.received }, as: UTF8.self) } }

        func makeSink() -> StreamingResponseSink {
            let box = Mutex<StreamingResponseSink?>(nil)
            let sink = StreamingResponseSink(
                allocator: ByteBufferAllocator(), hop: LoopHop(execute: { work in self.loop.async(execute: work) })
            ) { chunk, _ in
                let writable = self.state.withLock { state in
                    state.received.append(contentsOf: chunk.readableBytesView)
                    return state.writable
                }
                box.withLock { $0! }.chunkWritten(channelIsWritable: writable)
            }
            box.withLock { $0 = sink }
            return sink
        }

        func setWritable(_ writable: Bool, _ sink: StreamingResponseSink) {
            self.loop.sync {
                self.state.withLock { $0.writable = writable }
                sink.writabilityChanged(writable)
            }
        }
    }

    @Test("notices the connection cannot take coalesce into one: the oldest cursor, the newest id")
    func coalesces() {
        let channel = Channel()
        let sink = channel.makeSink()
        let subscriber = NoticeSubscriber(sink: sink, expires: nil, metrics: nil)
        subscriber.notify(from: "c1", to: "c2")
        #expect(channel.text == "id: c2\nevent: change\ndata: {\"cursor\":\"c1\"}\n\n")

        channel.setWritable(false, sink)
        subscriber.notify(from: "c2", to: "c3")
        subscriber.notify(from: "c3", to: "c4")
        subscriber.notify(from: "c4", to: "c5")
        #expect(channel.text == "id: c2\nevent: change\ndata: {\"cursor\":\"c1\"}\n\n")

        channel.setWritable(true, sink)
        #expect(channel.text == "id: c2\nevent: change\ndata: {\"cursor\":\"c1\"}\n\nid: c5\nevent: change\ndata: {\"cursor\":\"c2\"}\n\n")
    }

    @Test("a quiet stream gets a heartbeat; a notice left unread past the limit drops the subscriber; an expired one ends")
    func heartbeatsDropsAndExpiry() async {
        let channel = Channel()
        let sink = channel.makeSink()
        let subscriber = NoticeSubscriber(sink: sink, expires: nil, metrics: nil)
        let now = ContinuousClock.now
        subscriber.tick(now: now + .seconds(20), heartbeat: .seconds(15), slowLimit: .seconds(60))
        #expect(channel.text == ": heartbeat\n\n")

        channel.setWritable(false, sink)
        subscriber.notify(from: "c1", to: "c2")
        subscriber.tick(now: now + .seconds(30), heartbeat: .seconds(15), slowLimit: .seconds(60))
        subscriber.tick(now: .now + .seconds(61), heartbeat: .seconds(15), slowLimit: .seconds(60))
        #expect(await subscriber.ended() == .dropped)
        #expect(channel.text == ": heartbeat\n\n")

        let expiring = NoticeSubscriber(sink: Channel().makeSink(), expires: now + .seconds(2), metrics: nil)
        expiring.tick(now: now + .seconds(1), heartbeat: .seconds(15), slowLimit: .seconds(60))
        expiring.tick(now: now + .seconds(2), heartbeat: .seconds(15), slowLimit: .seconds(60))
        #expect(await expiring.ended() == .expired)
    }
}
