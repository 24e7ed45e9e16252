#if os(Linux)
import CLibPQ
import Glibc
import SpoutCore
import Synchronization

/// One PostgreSQL connection kept in libpq pipeline mode for as long as it lives, carrying the
/// whole reads of many requests at once (``SpoutCore/SharedReadingConnection``).
///
/// Each read is a ``PostgresEventDrivenRun`` in shared mode, sent behind the reads already in
/// the pipeline, each batch ending in a sync point: an implicit transaction of its own that
/// sets the request's role, claims and trace context first, local to it
/// (``PostgresConnection/sessionStatement(_:)``). The server answers batches in the order they
/// were sent; each answer goes to the run at the head of ``runs``, which then leaves the queue
/// (or goes to its end with its next batch). An error aborts the rest of its batch only: the
/// sync point ends that transaction, and the next batch starts clean.
///
/// All libpq work happens on ``PostgresReactor/shared``'s thread, so the connection needs no
/// lock: a read asked for on another thread is put in ``incoming`` and the reactor woken
/// (``PostgresReactor/wake(_:)``), unless it is handling this connection already, in which
/// case it takes the read before it returns. The reactor sends every read waiting with one
/// flush, and reads the answers as the socket has them. The socket stays armed for reading
/// while the connection is open, and for writing while libpq holds output the socket did not
/// take.
///
/// A read whose task is cancelled resumes at once and leaves its batch to run: its answers are
/// read and dropped when they come. No cancel request is ever sent (it would stop whichever
/// statement runs then, another request's). A statement past its timeout fails its own batch.
/// A server that does not answer within the answer deadline (the statement timeout of each
/// statement in flight, plus the grace period) has the socket shut, like any connection's. A
/// lost connection fails every read in flight and is closed on the reactor thread
/// (``complete()``); so does ``close()``, which shuts the socket to get there.
// @unchecked Sendable: `runs`, `isFlushing`, `connection` and `handle` are touched only on the
// reactor thread (see above); `incoming` is behind its lock; the rest is immutable or atomic.
final class PostgresSharedPipeline: SharedReadingConnection, PostgresReactorTask, @unchecked Sendable {
    let socket: Int32
    private let connection: PostgresConnection
    private let handle: OpaquePointer
    /// The runs sent, in the order of their batches, and when each was first sent (monotonic
    /// nanoseconds). Reactor thread only.
    private var runs: [(run: PostgresEventDrivenRun, since: UInt64)] = []
    /// Whether libpq holds output the socket has not taken yet. Reactor thread only.
    private var isFlushing = false
    private let incoming = Mutex(Incoming())
    private let broken = Atomic<Bool>(false)
    /// Reads asked for and not yet over.
    private let inFlight = Atomic<Int>(0)
    /// When the oldest run sent was sent (``PostgresAnswerDeadline/now()``); 0 when none is.
    private let oldestSince = Atomic<UInt64>(0)
    /// Set once ``complete()`` closed the connection (``closed()`` waits for it).
    private let ended = AsyncOneShotEvent()

    /// What other threads hand the reactor.
    private struct Incoming {
        var runs: [PostgresEventDrivenRun] = []
        var isClosed = false
        /// The reactor is handling the connection and takes what comes before it returns.
        var isHandling = false
        /// A wake-up is on its way.
        var isWoken = false
    }

    /// Takes `connection` (open, idle, read-only, with its statement timeout set) for good:
    /// puts it in pipeline mode and hands its socket to the reactor.
    init(_ connection: PostgresConnection) throws {
        let handle = try connection.idleHandle()
        try connection.obey(connection.stateMachine.eventDrivenStarted())
        guard PQsetnonblocking(handle, 1) == 0, PQenterPipelineMode(handle) == 1 else {
            connection.close()
            throw DatabaseError(.connectionFailed, message: "cannot enter pipeline mode")
        }
        self.connection = connection
        self.handle = handle
        self.socket = PQsocket(handle)
        PostgresReactor.shared.watch(self, socket: self.socket, events: .readable)
    }

    var isBroken: Bool { self.broken.load(ordering: .relaxed) }

    var load: SharedReaderLoad {
        let since = self.oldestSince.load(ordering: .relaxed)
        let now = PostgresAnswerDeadline.now()
        let waited = since == 0 ? nil : Duration.nanoseconds(Int64(clamping: now - min(since, now)))
        return SharedReaderLoad(inFlight: self.inFlight.load(ordering: .relaxed), oldestWaited: waited)
    }

    func readWhole(
        _ stream: RowStream, shape: ResultShape, format: OutputFormat, dateFormat: DateFormat, session: RequestSession?,
        roundTrips: RoundTripLog?
    ) async throws -> WholeRead? {
        try await PostgresWholeRead.read(
            stream, shape: shape, format: format, dateFormat: dateFormat, children: self.connection.childQueries, roundTrips: roundTrips
        ) { first, next in
            try await self.run(first, session: session, then: next)
        }
    }

    /// Runs `first` and the batches `next` returns, as ``PostgresConnection/runEventDriven(_:session:then:completion:)``
    /// does on a connection of its own; a cancelled task resumes at once with
    /// ``SpoutCore/DatabaseError/Code/cancelled``.
    private func run(
        _ first: StatementBatch, session: RequestSession?, then next: @escaping @Sendable ([[QueryResult]]) throws -> StatementBatch
    ) async throws -> [[QueryResult]] {
        let settings = try session.map { [try self.connection.sessionStatement($0)] } ?? []
        guard !first.statements.isEmpty || !settings.isEmpty else { return [] }
        let waiter = PostgresSharedWaiter()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard waiter.wait(with: continuation) else { return }
                let run = PostgresEventDrivenRun(
                    connection: self.connection, handle: self.handle, first: first, settings: settings, isShared: true, next: next
                ) { outcome in
                    self.inFlight.subtract(1, ordering: .relaxed)
                    waiter.resume(with: outcome)
                }
                self.submit(run)
            }
        } onCancel: {
            waiter.cancel()
        }
    }

    /// Hands `run` to the reactor, which sends it behind the runs in flight; fails it when the
    /// connection is gone.
    private func submit(_ run: PostgresEventDrivenRun) {
        let others = self.inFlight.add(1, ordering: .relaxed).newValue - 1
        let (accepted, wake) = self.incoming.withLock { incoming -> (Bool, Bool) in
            guard !incoming.isClosed else { return (false, false) }
            incoming.runs.append(run)
            guard !incoming.isHandling, !incoming.isWoken else { return (true, false) }
            incoming.isWoken = true
            return (true, true)
        }
        guard accepted else {
            run.abandon(with: DatabaseError(.connectionLost, message: "the shared connection is closed"))
            run.complete()
            return
        }
        self.connection.statistics.recordSharedRead(othersInFlight: others)
        if wake { PostgresReactor.shared.wake(self) }
    }

    /// Takes the runs handed over; on the last call of a turn (`last`), when there are none,
    /// marks the turn over. Returns nil once the connection is closed.
    private func takeIncoming(last: Bool) -> [PostgresEventDrivenRun]? {
        self.incoming.withLock { incoming -> [PostgresEventDrivenRun]? in
            guard !incoming.isClosed else { return nil }
            incoming.isWoken = false
            incoming.isHandling = !(last && incoming.runs.isEmpty)
            defer { incoming.runs = [] }
            return incoming.runs
        }
    }

    func handle(events: SocketInterest) -> SocketInterest? {
        var finished: [PostgresEventDrivenRun] = []
        defer { finished.forEach { $0.complete() } }
        guard !self.isBroken, let first = self.takeIncoming(last: false) else {
            finished = self.failAll()
            return nil
        }
        if self.isFlushing && events.contains(.writable) {
            guard self.flush() else {
                finished = self.failAll(also: first)
                return nil
            }
        }
        guard self.send(first) else {
            finished = self.failAll()
            return nil
        }
        if events.contains(.readable) || self.isFlushing {
            // Over TLS, bytes OpenSSL decrypted and libpq has not read yet never make the
            // socket readable: read them before waiting again.
            repeat {
                guard self.readAvailable(finished: &finished) else {
                    finished += self.failAll()
                    return nil
                }
            } while PostgresTLSBuffer.hasUnreadBytes(self.handle)
        }
        // What came meanwhile, until nothing does.
        while let more = self.takeIncoming(last: true), !more.isEmpty {
            guard self.send(more) else {
                finished += self.failAll()
                return nil
            }
        }
        if self.incoming.withLock({ $0.isClosed }) {
            finished += self.failAll()
            return nil
        }
        self.noteOldest()
        return self.isFlushing ? [.readable, .writable] : .readable
    }

    /// Sends `runs` behind those in flight, with one flush; false when the connection failed.
    private func send(_ runs: [PostgresEventDrivenRun]) -> Bool {
        guard !runs.isEmpty else { return true }
        let now = PostgresAnswerDeadline.now()
        for run in runs {
            self.runs.append((run, now))
            guard run.sendShared() else { return false }
            if self.runs.count == 1 { run.startCommand() }
        }
        self.refreshDeadline()
        return self.flush()
    }

    /// Reads what the socket has and hands every result libpq can deliver without waiting to
    /// the run at the head; runs that end are moved to `finished`. False when the connection
    /// failed.
    private func readAvailable(finished: inout [PostgresEventDrivenRun]) -> Bool {
        guard PQconsumeInput(self.handle) == 1 else { return false }
        var sentMore = false
        var progressed = false
        reading: while PQisBusy(self.handle) == 0, let head = self.runs.first {
            switch head.run.readResult() {
            case .read:
                continue
            case .waiting:
                break reading
            case .batchSent:
                // Its next batch went in behind the others.
                self.runs.removeFirst()
                self.runs.append(head)
                sentMore = true
            case .over:
                self.runs.removeFirst()
                finished.append(head.run)
                guard !self.connection.isBroken else { return false }
            }
            progressed = true
            self.runs.first?.run.startCommand()
        }
        if progressed { self.refreshDeadline() }
        if sentMore {
            guard self.flush() else { return false }
        }
        return PQstatus(self.handle) != CONNECTION_BAD
    }

    /// Sends what libpq holds; false when the connection failed.
    private func flush() -> Bool {
        guard let pending = self.connection.flushOutput(self.handle) else { return false }
        self.isFlushing = pending
        return true
    }

    /// Bounds the wait for what is in flight: the statement timeout once per statement, plus
    /// the grace period (``PostgresAnswerDeadline``); no deadline while nothing is.
    private func refreshDeadline() {
        self.connection.answerDeadline.end()
        guard !self.runs.isEmpty else { return }
        _ = self.connection.answerDeadline.begin(statements: self.runs.reduce(0) { $0 + $1.run.statementsInBatch })
    }

    /// Publishes when the oldest run in flight was sent, for ``load``.
    private func noteOldest() {
        self.oldestSince.store(self.runs.first?.since ?? 0, ordering: .relaxed)
    }

    /// The connection is lost (or closed): every run in flight or handed over fails, and the
    /// connection takes no more. Returns the runs to complete.
    private func failAll(also taken: [PostgresEventDrivenRun] = []) -> [PostgresEventDrivenRun] {
        self.broken.store(true, ordering: .relaxed)
        self.connection.answerDeadline.end()
        var closed = false
        let waiting = self.incoming.withLock { incoming in
            closed = incoming.isClosed
            defer {
                incoming.runs = []
                incoming.isClosed = true
            }
            return incoming.runs
        }
        let sent = self.runs.map(\.run)
        self.runs = []
        self.noteOldest()
        for run in sent {
            if closed {
                run.abandon(with: DatabaseError(.connectionLost, message: "the shared connection was closed"))
            } else {
                run.connectionFailed()
            }
        }
        let unsent = taken + waiting
        for run in unsent {
            run.abandon(with: DatabaseError(.connectionLost, message: "the shared connection was lost"))
        }
        return sent + unsent
    }

    var socketIsOpen: Bool {
        PQsocket(self.handle) == self.socket
    }

    /// The reactor no longer watches the socket: the connection is closed here, on its thread.
    func complete() {
        self.failAll().forEach { $0.complete() }
        self.connection.close()
        self.ended.set()
    }

    func closed() async {
        await self.ended.wait()
    }

    func close() {
        let open = self.incoming.withLock { incoming in
            defer { incoming.isClosed = true }
            return !incoming.isClosed
        }
        // The reactor then finds the socket readable, fails what is in flight and closes.
        if open { _ = shutdown(self.socket, Int32(SHUT_RDWR)) }
    }
}

/// The continuation of one shared read, resumed once: by the run's outcome, or at once when
/// the task is cancelled (the outcome then comes later and is dropped).
final class PostgresSharedWaiter: Sendable {
    private enum State {
        case initial
        case waiting(CheckedContinuation<[[QueryResult]], any Error>)
        case cancelled
        case resumed
    }

    private let state = Mutex(State.initial)

    /// Installs `continuation`; false (and resumed with the cancellation) when the task was
    /// cancelled first.
    func wait(with continuation: CheckedContinuation<[[QueryResult]], any Error>) -> Bool {
        let installed = self.state.withLock { state -> Bool in
            guard case .initial = state else { return false }
            state = .waiting(continuation)
            return true
        }
        if !installed { continuation.resume(throwing: Self.cancelled) }
        return installed
    }

    func resume(with outcome: Result<[[QueryResult]], any Error>) {
        self.take()?.resume(with: outcome)
    }

    func cancel() {
        let continuation = self.state.withLock { state -> CheckedContinuation<[[QueryResult]], any Error>? in
            switch state {
            case .initial:
                state = .cancelled
                return nil
            case .waiting(let continuation):
                state = .resumed
                return continuation
            case .cancelled, .resumed:
                return nil
            }
        }
        continuation?.resume(throwing: Self.cancelled)
    }

    private func take() -> CheckedContinuation<[[QueryResult]], any Error>? {
        self.state.withLock { state in
            guard case .waiting(let continuation) = state else { return nil }
            state = .resumed
            return continuation
        }
    }

    private static let cancelled = DatabaseError(.cancelled, message: "the request was cancelled")
}
#endif
