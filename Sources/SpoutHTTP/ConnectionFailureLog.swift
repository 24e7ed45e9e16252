import Logging
import NIOCore
import Synchronization

/// Logs why connections could not be accepted or set up, once per cause per interval.
///
/// A failure that hits every connection (a socket option the process may not set, an
/// exhausted descriptor table) must reach the operator, but must not write a line per
/// connection: under a flood that would be the next denial of service. The first failure of a
/// cause is logged at `error` at once; later ones within ``interval`` are counted, and the
/// count is reported with the next line for that cause.
///
/// A cause is the error's description (for NIO's `IOError`, the failing call and `errno`).
final class ConnectionFailureLog: Sendable {
    let interval: Duration
    private let logger: Logger
    private let causes = Mutex<[String: Cause]>([:])

    private struct Cause {
        var lastLogged: ContinuousClock.Instant
        var suppressed: Int
    }

    init(logger: Logger, interval: Duration = .seconds(60)) {
        self.logger = logger
        self.interval = interval
    }

    /// Records a failure of `stage` ("accept", "setup") and logs it unless the same cause was
    /// logged less than ``interval`` ago.
    func record(_ error: any Error, stage: String) {
        let cause = "\(stage): \(error)"
        let now = ContinuousClock.now
        let suppressed: Int? = self.causes.withLock { causes in
            if var known = causes[cause] {
                guard now - known.lastLogged >= self.interval else {
                    known.suppressed += 1
                    causes[cause] = known
                    return nil
                }
                causes[cause] = Cause(lastLogged: now, suppressed: 0)
                return known.suppressed
            }
            // Bounded: causes are few in practice, but never let a stream of distinct
            // descriptions grow the table without limit.
            if causes.count >= 64 { causes.removeAll(keepingCapacity: true) }
            causes[cause] = Cause(lastLogged: now, suppressed: 0)
            return 0
        }
        guard let suppressed else { return }
        self.logger.error(
            "connection \(stage) failed; the connection was closed",
            metadata: [
                "error": .string("\(error)"),
                "connection.stage": .string(stage),
                "log.suppressed": .stringConvertible(suppressed),
                "log.interval_s": .stringConvertible(self.interval.components.seconds),
            ]
        )
    }
}

/// Sits on the listening channel and reports what fails there (for example `accept` with
/// `EMFILE` when the process runs out of descriptors) to a ``ConnectionFailureLog``.
final class AcceptErrorHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = Any
    typealias InboundOut = Any

    private let failures: ConnectionFailureLog

    init(failures: ConnectionFailureLog) {
        self.failures = failures
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.failures.record(error, stage: "accept")
        context.fireErrorCaught(error)
    }
}
