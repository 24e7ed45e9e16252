import Foundation

/// Threads that live as long as the process and wait in system calls of their own (the
/// PostgreSQL reactor's `epoll_wait`, its watchdog's sleep), outside every event loop and
/// the database threads.
public enum DetachedThread {
    /// Starts `body` on a new thread named `name` for the system (``ThreadName``).
    public static func start(named name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            ThreadName.setCurrent(name)
            body()
        }
        thread.start()
    }
}
