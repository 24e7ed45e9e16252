#if os(Linux)
import CEventPoll
import Glibc
import SpoutCore
import Synchronization

/// One thread that waits, with epoll, on the sockets of the PostgreSQL connections running
/// event-driven (``PostgresConnection/runEventDriven(_:then:completion:)``), and drives each
/// as its answers arrive. However many requests are in flight, waiting for the database costs
/// no thread of its own, and one `epoll_wait` serves them all.
///
/// The thread that starts a task sends its first statements itself and then hands the socket
/// over with ``watch(_:socket:events:)``: an `epoll_ctl`, no wake-up of the reactor, which
/// only runs when an answer arrives. Sockets are watched one-shot, so a task is handled by one
/// callback at a time, and stay registered, disarmed, once their task is over: the next task
/// on the connection re-arms the socket (`EPOLL_CTL_MOD`) instead of adding and deleting it
/// again. Closing a socket removes it from epoll, so a descriptor number reused by a new
/// connection is added afresh.
///
/// The same thread enforces the answer deadlines of every open connection
/// (``PostgresAnswerDeadline``): a `timerfd` in its epoll ticks every ``deadlineInterval``
/// while any connection with a deadline is open, and each tick shuts the sockets of the waits
/// past theirs.
///
/// Another thread can ask the reactor to handle a task now, without an event on its socket
/// (``wake(_:)``): an `eventfd` in the same epoll, written once however many wake-ups are
/// pending. A shared pipeline (``PostgresSharedPipeline``) does all its libpq work on this
/// thread that way.
///
/// The reactor lives as long as the process (like NIO's singleton event loops) and is started
/// on first use.
final class PostgresReactor: Sendable {
    /// The process's reactor.
    static let shared = PostgresReactor()

    /// The task on each watched socket.
    // `any PostgresReactorTask` is not Sendable: each task is handed over through this lock,
    // and only one thread drives it at a time (its starter, then the reactor).
    private let tasks = Mutex(SendableBox([Int32: any PostgresReactorTask]()))
    private let epoll: Int32
    /// Ticks while ``deadlines`` holds any: armed and disarmed holding that lock.
    private let timer: Int32
    /// The answer deadlines of open connections.
    private let deadlines = Mutex<[ObjectIdentifier: PostgresAnswerDeadline]>([:])
    /// Readable while ``wakeups`` holds tasks to handle.
    private let wakeSignal: Int32
    /// Tasks to handle on the next turn, whatever their sockets say (``wake(_:)``).
    // Not Sendable tasks: handed over through this lock, like ``tasks``.
    private let wakeups = Mutex(SendableBox([any PostgresReactorTask]()))
    /// Whether ``wakeSignal`` has been written since the reactor last read it.
    private let isSignalled = Atomic<Bool>(false)

    /// How often the deadlines are checked: a late answer is noticed this much after its
    /// deadline at most.
    static let deadlineInterval: Duration = .milliseconds(250)

    private init() {
        self.epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(self.epoll >= 0, "cannot create the PostgreSQL reactor's epoll instance")
        self.timer = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        precondition(self.timer >= 0, "cannot create the PostgreSQL reactor's deadline timer")
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = self.timer
        precondition(epoll_ctl(self.epoll, EPOLL_CTL_ADD, self.timer, &event) == 0, "cannot watch the deadline timer")
        self.wakeSignal = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        precondition(self.wakeSignal >= 0, "cannot create the PostgreSQL reactor's wake-up signal")
        event.data.fd = self.wakeSignal
        precondition(epoll_ctl(self.epoll, EPOLL_CTL_ADD, self.wakeSignal, &event) == 0, "cannot watch the wake-up signal")
        self.startThread()
    }

    /// Enforces `deadline` from now until ``forget(_:)``.
    func watch(_ deadline: PostgresAnswerDeadline) {
        self.deadlines.withLock { deadlines in
            deadlines[ObjectIdentifier(deadline)] = deadline
            if deadlines.count == 1 { self.setTimer(ticking: true) }
        }
    }

    /// Stops enforcing `deadline` (its connection is closing).
    func forget(_ deadline: PostgresAnswerDeadline) {
        self.deadlines.withLock { deadlines in
            guard deadlines.removeValue(forKey: ObjectIdentifier(deadline)) != nil, deadlines.isEmpty else { return }
            self.setTimer(ticking: false)
        }
    }

    /// Arms the timer to tick every ``deadlineInterval``, or disarms it.
    private func setTimer(ticking: Bool) {
        let (seconds, attoseconds) = ticking ? Self.deadlineInterval.components : (0, 0)
        let interval = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var setting = itimerspec(it_interval: interval, it_value: interval)
        _ = timerfd_settime(self.timer, 0, &setting, nil)
    }

    /// A tick: shuts the sockets of the waits past their deadlines.
    private func checkDeadlines() {
        var expirations: UInt64 = 0
        _ = read(self.timer, &expirations, MemoryLayout<UInt64>.size)
        let deadlines = self.deadlines.withLock { Array($0.values) }
        let now = PostgresAnswerDeadline.now()
        for deadline in deadlines {
            _ = deadline.expireIfOverdue(now: now)
        }
    }

    /// Hands `task` to the reactor, which calls it back when `events` arrive on `socket`. The
    /// caller must not touch the task afterwards.
    func watch(_ task: any PostgresReactorTask, socket: Int32, events interest: SocketInterest) {
        let events = Self.epollEvents(interest)
        self.tasks.withLock { $0.value[socket] = task }
        let watched = self.control(EPOLL_CTL_MOD, socket, events) || (errno == ENOENT && self.control(EPOLL_CTL_ADD, socket, events))
        if !watched {
            // Not watchable (closed meanwhile): end it here.
            self.forget(task, socket: socket)
            task.complete()
        }
    }

    /// Has the reactor handle `task`, watched already, on its next turn (with no events), from
    /// any thread: a task with work that does not wait for its socket.
    func wake(_ task: any PostgresReactorTask) {
        self.wakeups.withLock { $0.value.append(task) }
        if !self.isSignalled.exchange(true, ordering: .acquiringAndReleasing) {
            var one: UInt64 = 1
            _ = write(self.wakeSignal, &one, MemoryLayout<UInt64>.size)
        }
    }

    /// Handles the tasks woken since the last turn.
    private func handleWakeups() {
        var count: UInt64 = 0
        _ = read(self.wakeSignal, &count, MemoryLayout<UInt64>.size)
        self.isSignalled.store(false, ordering: .releasing)
        let woken = self.wakeups.withLock { box in
            defer { box.value = [] }
            return SendableBox(box.value)
        }
        for task in woken.value where task.socketIsOpen {
            let socket = task.socket
            guard self.tasks.withLock({ $0.value[socket] }) === task else { continue }
            self.handle(task, socket: socket, events: [])
        }
    }

    /// Removes `task` from the registry, unless its socket already belongs to another task.
    private func forget(_ task: any PostgresReactorTask, socket: Int32) {
        self.tasks.withLock { tasks in
            if let current = tasks.value[socket], current === task { tasks.value[socket] = nil }
        }
    }

    private func startThread() {
        SpoutThread.start(named: "spout-pg-io") { self.run() }
    }

    /// The reactor thread's loop; never returns.
    private func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        while true {
            let count = epoll_wait(self.epoll, &events, Int32(events.count), -1)
            guard count > 0 else { continue }
            for index in 0..<Int(count) {
                let socket = events[index].data.fd
                if socket == self.timer {
                    self.checkDeadlines()
                    continue
                }
                if socket == self.wakeSignal {
                    self.handleWakeups()
                    continue
                }
                guard let task = self.tasks.withLock({ $0.value[socket] }) else { continue }
                self.handle(task, socket: socket, events: Self.interest(events[index].events))
            }
        }
    }

    /// Lets `task` handle `events`, then re-arms its socket for what it waits for next, or
    /// ends it.
    private func handle(_ task: any PostgresReactorTask, socket: Int32, events: SocketInterest) {
        let next = task.handle(events: events)
        if let next, task.socketIsOpen {
            if self.control(EPOLL_CTL_MOD, socket, Self.epollEvents(next)) { return }
            _ = epoll_ctl(self.epoll, EPOLL_CTL_DEL, socket, nil)
        }
        // Over: the socket stays registered, disarmed, for the connection's next task.
        self.forget(task, socket: socket)
        task.complete()
    }

    /// The epoll events for `interest`.
    private static func epollEvents(_ interest: SocketInterest) -> UInt32 {
        (interest.contains(.readable) ? EPOLLIN.rawValue : 0) | (interest.contains(.writable) ? EPOLLOUT.rawValue : 0)
    }

    /// What arrived, from epoll's events: an error or a hang-up reads as readable (libpq then
    /// reports it).
    private static func interest(_ events: UInt32) -> SocketInterest {
        var interest: SocketInterest = []
        if events & (EPOLLIN.rawValue | EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 { interest.insert(.readable) }
        if events & EPOLLOUT.rawValue != 0 { interest.insert(.writable) }
        return interest
    }

    /// Adds or re-arms `socket`, one-shot; false when epoll refuses.
    private func control(_ operation: Int32, _ socket: Int32, _ interest: UInt32) -> Bool {
        var event = epoll_event()
        event.events = interest | EPOLLONESHOT.rawValue
        event.data.fd = socket
        return epoll_ctl(self.epoll, operation, socket, &event) == 0
    }
}

/// Moves a non-Sendable value into a `Mutex`.
// @unchecked Sendable: the value is only reached through the `Mutex` that holds the box.
struct SendableBox<Value: ~Copyable>: ~Copyable, @unchecked Sendable {
    var value: Value
    init(_ value: consuming Value) { self.value = value }
}
#endif
