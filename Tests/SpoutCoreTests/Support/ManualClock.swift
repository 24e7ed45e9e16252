import SpoutCore
import Synchronization

/// A ``DatabaseClock`` that moves only when a test says so: scheduled actions run, in deadline
/// order, inside ``advance(by:)``, on the test's thread.
final class ManualClock: DatabaseClock {
    private struct Timer {
        var deadline: Duration
        var order: Int
        var action: @Sendable () -> Void
    }

    private struct State {
        var now: Duration = .zero
        var timers: [Timer] = []
        var scheduled = 0
    }

    private let state = Mutex(State())

    var now: Duration { self.state.withLock { $0.now } }

    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) {
        self.state.withLock { state in
            state.scheduled += 1
            state.timers.append(Timer(deadline: state.now + delay, order: state.scheduled, action: action))
        }
    }

    /// Actions waiting for their deadline.
    var pending: Int { self.state.withLock { $0.timers.count } }

    /// Moves time forward by `duration`, running every action that falls due (also those an
    /// action schedules within the interval).
    func advance(by duration: Duration) {
        let target = self.state.withLock { $0.now + duration }
        while true {
            let due: Timer? = self.state.withLock { state in
                guard let index = state.timers.indices.filter({ state.timers[$0].deadline <= target })
                    .min(by: { (state.timers[$0].deadline, state.timers[$0].order) < (state.timers[$1].deadline, state.timers[$1].order) })
                else { return nil }
                let timer = state.timers.remove(at: index)
                state.now = max(state.now, timer.deadline)
                return timer
            }
            guard let due else { break }
            due.action()
        }
        self.state.withLock { $0.now = target }
    }
}
