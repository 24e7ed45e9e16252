import NIOCore

/// A task executor that runs every job of the tasks preferring it on one event loop.
///
/// The server starts each request's task with this preference for the connection's event
/// loop, so the handler, the lease and the response run where the request was read: the only
/// thread hops left are to the thread pool for the blocking database work and back. Jobs must
/// not block (see ``RouteHandler``).
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        self.eventLoop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
