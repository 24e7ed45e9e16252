import Logging
import NIOCore
import NIOPosix

/// What every connection handler of a server shares.
struct ConnectionEnvironment: Sendable {
    var router: Router
    var configuration: ServerConfiguration
    var threadPool: NIOThreadPool
    var logger: Logger
    var statistics: ServerStatistics
    /// How work from other threads reaches a connection's event loop (tests replace it).
    var makeHop: @Sendable (any EventLoop) -> LoopHop = { LoopHop.eventLoop($0) }
}
