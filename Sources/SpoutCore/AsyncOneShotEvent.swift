import Synchronization

/// A one-shot flag tasks can wait for without blocking a thread.
///
/// Contract: ``wait()`` returns once ``set()`` has been called, at once when it already was;
/// ``set()`` may be called from any thread, more than once.
public final class AsyncOneShotEvent: Sendable {
    private let state = Mutex<(isSet: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    public init() {}

    public func set() {
        let waiters = self.state.withLock { state in
            state.isSet = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = self.state.withLock { state in
                if state.isSet { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}
