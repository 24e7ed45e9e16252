import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals

/// SIGTERM, SIGINT and SIGHUP, trapped from before the server accepts its first connection
/// until the process ends, each handed to the service group as a graceful shutdown: the one
/// owner of those signals (the group is given none of its own). A signal that arrives before
/// the group is given (``shut(_:)``) is remembered, and the group shuts down as soon as it is
/// (``ServiceLifecycle/ServiceGroup/triggerGracefulShutdown()`` before `run` lets `run` start
/// its services, then stop them). So an instance stopped as soon as it may accept connections
/// (a rolling restart) drains and exits with status 0, not by the signal's default action.
final class ShutdownSignals: Sendable {
    /// The group once given, and whether a signal came.
    private let state = Mutex<(group: ServiceGroup?, signalled: Bool)>((nil, false))

    /// Traps the signals now; call it before the server starts.
    static func trap(logger: Logger) async -> ShutdownSignals {
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint, .sighup)
        let trapped = ShutdownSignals()
        Task.detached {
            for await signal in signals {
                logger.notice("signal received", metadata: ["signal": "\(signal)"])
                let group = trapped.state.withLock { state -> ServiceGroup? in
                    state.signalled = true
                    return state.group
                }
                await group?.triggerGracefulShutdown()
            }
        }
        return trapped
    }

    /// Hands the signals to `group` from now on; one that came already shuts it down.
    func shut(_ group: ServiceGroup) async {
        let signalled = self.state.withLock { state -> Bool in
            state.group = group
            return state.signalled
        }
        if signalled { await group.triggerGracefulShutdown() }
    }
}
