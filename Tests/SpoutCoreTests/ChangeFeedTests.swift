import SpoutCore
import Testing

/// ``ChangeFeed``: what a poller of the change log passes on, without a database.
@Suite("Change feed")
struct ChangeFeedTests {
    static func change(_ writer: Int64, _ key: String) -> LoggedChange {
        LoggedChange(writer: writer, table: "pet(name)", key: [.text(key)])
    }

    @Test("each writer's changes are passed on once, also when a transaction open across polls commits later")
    func passesOnOnce() {
        var feed = ChangeFeed(position: 100)
        // Transaction 100 is open; 101 committed: the position stays at 100.
        let first = feed.advance(to: ChangeLogPosition(position: 100, horizon: 0), changes: [Self.change(101, "Rex")])
        #expect(first.changes.map(\.key) == [[.text("Rex")]])
        #expect(first.from == 100 && first.to == 100)
        // The next poll reads from 100 again: 101 is not passed on twice; 100 commits now.
        let second = feed.advance(
            to: ChangeLogPosition(position: 102, horizon: 0), changes: [Self.change(100, "Fang"), Self.change(101, "Rex")])
        #expect(second.changes.map(\.key) == [[.text("Fang")]])
        #expect(second.from == 100 && second.to == 102)
        #expect(feed.position == 102)
        // Nothing new: nothing passed on.
        let quiet = feed.advance(to: ChangeLogPosition(position: 102, horizon: 0), changes: [])
        #expect(quiet.changes.isEmpty && quiet.from == 102 && quiet.to == 102 && !quiet.isPastHorizon)
    }

    @Test("the position never moves back, and a log pruned past it says so")
    func positionAndHorizon() {
        var feed = ChangeFeed(position: 50)
        let back = feed.advance(to: ChangeLogPosition(position: 40, horizon: 0), changes: [])
        #expect(back.to == 50 && feed.position == 50)
        let pruned = feed.advance(to: ChangeLogPosition(position: 60, horizon: 55), changes: [])
        #expect(pruned.isPastHorizon)
        #expect(!feed.advance(to: ChangeLogPosition(position: 60, horizon: 55), changes: []).isPastHorizon)
    }
}
