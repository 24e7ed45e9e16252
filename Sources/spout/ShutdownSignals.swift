import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals

/// SIGTERM, SIGINT and SIGHUP, trapped from before the server accepts its first connection
/// until the process ends, each handed to the service group as a graceful shutdown: the one
/// owner of those signals (the group is given none of its own).
///
/// Trapped only when the group starts, a signal arriving after the server began serving but
/// before that (a supervisor stopping an instance that has just started) took its default
/// action and ended the process with status 143, cutting its responses short. A signal that
/// arrives before ``shut(_:)`` has a group is remembered, and the group shuts down as soon as
/// it is given (``ServiceLifecycle/ServiceGroup/triggerGracefulShutdown()`` before `run`
/// starts its services, then stops them).
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
