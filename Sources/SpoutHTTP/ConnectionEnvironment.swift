import Logging
import NIOCore
import Tracing

/// What every connection handler of a server shares.
struct ConnectionEnvironment: Sendable {
    var router: Router
    var configuration: ServerConfiguration
    var logger: Logger
    var statistics: ServerStatistics
    /// Where requests, streams and failures are counted; nil when metrics are off.
    var metrics: ServerMetrics? = nil
    /// The spool and the per-address stream cap; nil: streams neither spool nor are capped.
    var streams: StreamServices? = nil
    /// What starts each request's span (``RequestSpan``); nil: the server does not trace.
    var tracer: (any Tracer)? = nil
    /// The server's running request tasks, which its shutdown waits for.
    var requestTasks = RequestTasks()
    /// The request bodies held in memory, all connections together.
    var bodyBudget = RequestBodyBudget(limit: 0)
    /// How work from other threads reaches a connection's event loop (tests replace it).
    var makeHop: @Sendable (any EventLoop) -> LoopHop = { LoopHop.eventLoop($0) }
}
