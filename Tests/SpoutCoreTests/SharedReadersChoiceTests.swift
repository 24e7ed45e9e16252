import Testing

@testable import SpoutCore

/// Which shared connection a read is lent (``SharedReaders/choose(_:)``), without a
/// database: the fewest reads in flight, never one stalled behind a slow read.
@Suite("Shared readers' choice")
struct SharedReadersChoiceTests {
    func load(_ inFlight: Int, oldest waited: Duration?) -> SharedReaderLoad {
        SharedReaderLoad(inFlight: inFlight, oldestWaited: waited)
    }

    @Test("no connection, no choice")
    func none() {
        #expect(SharedReaders.choose([]) == nil)
    }

    @Test("the fewest reads in flight wins; the first of equals")
    func fewest() {
        let loads = [self.load(3, oldest: .milliseconds(1)), self.load(1, oldest: .milliseconds(2)), self.load(1, oldest: .zero)]
        #expect(SharedReaders.choose(loads) == 1)
        #expect(SharedReaders.choose([self.load(0, oldest: nil), self.load(0, oldest: nil)]) == 0)
    }

    @Test("a connection whose oldest read is in flight for the stall limit or longer takes no more")
    func stalled() {
        let limit = SharedReaders.stallLimit
        let loads = [self.load(1, oldest: limit), self.load(9, oldest: limit - .milliseconds(1))]
        #expect(SharedReaders.choose(loads) == 1)
        #expect(SharedReaders.choose([self.load(1, oldest: limit * 10)]) == nil)
        #expect(SharedReaders.choose([self.load(1, oldest: limit * 10), self.load(0, oldest: nil)]) == 1)
    }
}
