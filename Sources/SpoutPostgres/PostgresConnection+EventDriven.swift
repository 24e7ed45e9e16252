#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CLibPQ
import SpoutCore

extension PostgresConnection: EventDrivenConnection {
    public func canRunEventDriven(readOnly: Bool, statementTimeout milliseconds: Int?) -> Bool {
        #if !os(Linux)
        // The reactor needs Linux's epoll; elsewhere every statement takes the thread pool.
        return false
        #else
        // Without session state every statement needs its transaction's settings first: the
        // thread-pool path does that round trip.
        return self.stateMachine.canRunEventDriven(readOnly: readOnly, statementTimeout: milliseconds, status: self.transactionStatus)
        #endif
    }

    /// Sends each batch in libpq pipeline mode (prepares of new statements, then the
    /// statements, then one sync) with the socket non-blocking, and lets
    /// ``PostgresReactor/shared`` read the answers. A statement with a `rowLimit` is read in
    /// single-row mode, so the rows past the limit are dropped as they arrive. With a
    /// `session`, each implicit transaction starts with ``sessionStatement(_:)``, in the same
    /// pipeline: its `set_config(..., true)` lasts until the transaction ends at the sync.
    public func runEventDriven(
        _ first: StatementBatch,
        session: RequestSession?,
        then next: @escaping @Sendable (_ results: [[QueryResult]]) throws -> StatementBatch,
        completion: @escaping @Sendable (Result<[[QueryResult]], any Error>) -> Void
    ) {
        let handle: OpaquePointer
        let settings: [BoundStatement]
        do {
            settings = try session.map { [try self.sessionStatement($0)] } ?? []
            handle = try self.idleHandle()
            #if os(Linux)
            try self.obey(self.stateMachine.eventDrivenStarted())
            #endif
        } catch {
            completion(.failure(error))
            return
        }
        #if os(Linux)
        self.statistics.recordEventDrivenRun()
        let run = PostgresEventDrivenRun(
            connection: self, handle: handle, first: first, settings: settings, next: next, completion: completion)
        if let events = run.start() {
            PostgresReactor.shared.watch(run, socket: run.socket, events: events)
        } else {
            run.complete()
        }
        #else
        _ = (handle, settings)
        completion(.failure(DatabaseError(.unsupported, message: "event-driven runs need Linux's epoll")))
        #endif
    }
}

/// One ``PostgresConnection/runEventDriven(_:then:completion:)``: sends a batch, reads its
/// results as they can be read without waiting, sends the next batch, and calls back when done.
///
/// Alone on its connection, it owns the connection from ``start()`` until ``complete()``:
/// ``start()`` runs on the caller's thread; once the socket is handed to the reactor,
/// everything else runs there. Shared (``PostgresSharedPipeline``), it owns nothing: the
/// pipeline keeps the connection in pipeline mode, sends the run's batches among other runs'
/// (``sendShared()``) and hands it each result while its batch is at the head of the
/// pipeline (``readResult()``), all on the reactor thread.
// @unchecked Sendable: a run is touched by one thread at a time, as said above: its starter,
// then the reactor (handed over through the reactor's lock or, shared, the pipeline's list of
// runs to send); what crosses threads afterwards is its finished outcome, read by
// ``complete()``.
final class PostgresEventDrivenRun: PostgresReactorTask, @unchecked Sendable {
    /// What reading one result did (``readResult()``).
    enum ReadStep {
        /// A result was read; the batch goes on.
        case read
        /// The batch's sync point has not been answered yet: wait for the socket.
        case waiting
        /// The batch was read through its sync, and the next batch has been queued.
        case batchSent
        /// The run is over: its outcome is set.
        case over
    }

    /// One command of the pipeline.
    private enum Command {
        /// Prepares the statement `key` (``PostgresStatementNames/key(_:_:)``) as `name`.
        case prepare(name: String, key: String, tentative: Bool)
        /// Runs the next statement of the batch (a tentative one, or not).
        case query(tentative: Bool)
        /// Sets the session's role and claims, or opens the transaction, for the statements
        /// after it (results dropped, not counted as the request's statements).
        case settings(tentative: Bool)
        /// Ends an implicit transaction: the server answers it even after an error.
        case sync
    }

    let socket: Int32
    private let connection: PostgresConnection
    private let handle: OpaquePointer
    /// Sent first in each implicit transaction: the session's `set_config` statement (none
    /// without a session), or what ``PostgresConnection/begin(readOnly:session:)`` sends.
    private let settings: [BoundStatement]
    private let next: @Sendable ([[QueryResult]]) throws -> StatementBatch
    private let completion: @Sendable (Result<[[QueryResult]], any Error>) -> Void

    private var batch: StatementBatch
    private var commands: [Command] = []
    /// The command whose results are being read.
    private var current = 0
    private var collected: QueryResult?
    private var batchResults: [QueryResult] = []
    private var tentativeResults: [QueryResult] = []
    /// Why the batch's tentative statements are left out, once one of them failed.
    private var tentativeFailure: (any Error)?
    private var results: [[QueryResult]] = []
    private var failure: (any Error)?
    private var outcome: Result<[[QueryResult]], any Error>?
    private var isFlushing = false
    /// Whether this run set the connection's answer deadline (for the batch being read).
    private var setsDeadline = false
    /// Whether the connection is a ``PostgresSharedPipeline``'s: kept in pipeline mode by it,
    /// its deadline and flushing its business.
    private let isShared: Bool

    init(
        connection: PostgresConnection, handle: OpaquePointer, first: StatementBatch, settings: [BoundStatement] = [],
        isShared: Bool = false, next: @escaping @Sendable ([[QueryResult]]) throws -> StatementBatch,
        completion: @escaping @Sendable (Result<[[QueryResult]], any Error>) -> Void
    ) {
        self.isShared = isShared
        self.connection = connection
        self.handle = handle
        self.settings = settings
        self.socket = PQsocket(handle)
        self.batch = first
        self.next = next
        self.completion = completion
    }

    private var interest: SocketInterest {
        self.isFlushing ? [.readable, .writable] : .readable
    }

    /// Sends the first batch; returns the events to wait for, or nil when the run is already
    /// over (then call ``complete()``).
    func start() -> SocketInterest? {
        guard !self.batch.statements.isEmpty || !self.settings.isEmpty else {
            self.connection.stateMachine.eventDrivenEnded()
            self.outcome = .success([])
            return nil
        }
        guard PQsetnonblocking(self.handle, 1) == 0, PQenterPipelineMode(self.handle) == 1 else {
            self.connectionFailed()
            return nil
        }
        return self.send() ? self.interest : nil
    }

    func handle(events: SocketInterest) -> SocketInterest? {
        if self.isFlushing && events.contains(.writable) {
            guard self.flush() else { return nil }
        }
        // Over TLS, bytes OpenSSL decrypted and libpq has not read yet never make the socket
        // readable: read them before waiting again.
        repeat {
            guard self.readAvailable() else { return nil }
        } while PostgresTLSBuffer.hasUnreadBytes(self.handle)
        return self.interest
    }

    /// Reads what the socket has and handles every result libpq can deliver without waiting
    /// (sending the next batch when one ends). False when the run is over.
    private func readAvailable() -> Bool {
        guard PQconsumeInput(self.handle) == 1 else {
            self.connectionFailed()
            return false
        }
        reading: while PQisBusy(self.handle) == 0 {
            switch self.readResult() {
            case .read, .batchSent: continue
            case .waiting: break reading
            case .over: return false
            }
        }
        if PQstatus(self.handle) == CONNECTION_BAD {
            // Lost while reading (libpq has closed the socket): nothing more will arrive.
            self.connectionFailed()
            return false
        }
        return true
    }

    /// Reads the connection's next result, which belongs to the current command, when libpq
    /// has one ready (`PQisBusy` is 0). At the end of the batch, sends the next batch or
    /// finishes the run.
    func readResult() -> ReadStep {
        let result = PQgetResult(self.handle)
        guard case .sync = self.commands[self.current] else {
            if let result {
                self.read(result)
                PQclear(result)
            } else {
                self.endCommand()
            }
            return .read
        }
        // A sync point answers with one result of its own, and no null after it.
        guard let result else { return .waiting }
        let status = PQresultStatus(result)
        PQclear(result)
        guard status == PGRES_PIPELINE_SYNC else {
            self.connection.markBroken()
            self.failure = self.failure ?? DatabaseError(.connectionLost, message: "unexpected result after a pipeline")
            self.finish()
            return .over
        }
        self.current += 1
        if self.current < self.commands.count {
            self.startCommand()
            return .read
        }
        return self.endBatch() ? .batchSent : .over
    }

    /// Runs to the end on the calling thread, waiting for the socket with `poll(2)` where the
    /// reactor would wait with epoll: the blocking path (``PostgresConnection/queryAll(_:)``)
    /// and the event-driven one share this one implementation of pipelines. Call it instead of
    /// handing the run to the reactor; ``complete()`` is not called.
    func runBlocking() -> Result<[[QueryResult]], any Error> {
        var interest = self.start()
        while let events = interest {
            var descriptor = pollfd(
                fd: self.socket, events: Int16(POLLIN) | (events.contains(.writable) ? Int16(POLLOUT) : 0), revents: 0)
            guard poll(&descriptor, 1, -1) >= 0 else {
                if errno == EINTR { continue }
                self.connectionFailed()
                break
            }
            var happened: SocketInterest = []
            if descriptor.revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 { happened.insert(.readable) }
            if descriptor.revents & Int16(POLLOUT) != 0 { happened.insert(.writable) }
            interest = self.handle(events: happened)
        }
        return self.outcome ?? .failure(DatabaseError(.connectionLost, message: "the pipeline ended without an outcome"))
    }

    var socketIsOpen: Bool {
        PQsocket(self.handle) == self.socket
    }

    func complete() {
        guard let outcome = self.outcome else {
            // The reactor could not watch the socket: what was sent cannot be read back.
            self.connection.markBroken()
            self.completion(.failure(DatabaseError(.connectionLost, message: "the connection's socket cannot be watched")))
            return
        }
        self.completion(outcome)
    }

    // MARK: Sending

    /// Queues the batch's commands and sync points, and flushes what the socket takes. False
    /// when the run is over (the connection failed).
    private func send() -> Bool {
        // Each batch is waited for under a deadline of its own, one statement timeout per
        // statement (each runs under its own) plus the grace period.
        self.stopWaiting()
        self.setsDeadline = self.connection.answerDeadline.begin(statements: self.statementsInBatch)
        guard self.queueBatch() else { return false }
        self.startCommand()
        return self.flush()
    }

    /// Queues the first batch of a run on a shared pipeline, behind the batches already in it;
    /// the pipeline flushes, and starts the run's first command once the run is at its head.
    /// False when the connection failed.
    ///
    /// A statement whose prepare another run in flight has sent, but whose answer has not been
    /// read yet, is prepared again under a new name (names are never reused): harmless, and
    /// only while a statement is new; sharing the other run's name would leave this run
    /// failing on a prepare that failed for the other.
    func sendShared() -> Bool {
        self.connection.statistics.recordEventDrivenRun()
        return self.queueBatch()
    }

    /// Statements of the batch being sent, its settings included: what its answer deadline is
    /// counted in.
    var statementsInBatch: Int {
        self.batch.statements.count + self.batch.tentative.count + (self.settings.isEmpty ? 0 : 2)
    }

    /// Queues the batch's commands and sync points, without flushing; each statement not yet
    /// prepared is prepared once in it. False when the run is over (the connection failed).
    private func queueBatch() -> Bool {
        var pending: [String: String] = [:]
        self.commands = []
        self.current = 0
        self.batchResults = []
        self.tentativeResults = []
        self.tentativeFailure = nil
        self.connection.statementStarting()
        guard self.queueSettings(tentative: false, pending: &pending),
            self.queue(self.batch.statements, tentative: false, pending: &pending)
        else { return false }
        if !self.batch.tentative.isEmpty {
            // A sync point keeps a failing tentative statement from rolling the others back;
            // a read-only session has nothing to roll back, and is spared the extra send
            // (libpq flushes at each sync point). After one, the tentative statements' own
            // transaction sets the session again.
            if self.connection.stateMachine.sessionReadOnly != true {
                guard self.sync(), self.queueSettings(tentative: true, pending: &pending) else { return false }
            }
            guard self.queue(self.batch.tentative, tentative: true, pending: &pending) else { return false }
        }
        return self.sync()
    }

    /// Queues a sync point. False when the run is over (the connection failed).
    private func sync() -> Bool {
        guard PQpipelineSync(self.handle) == 1 else { return self.sendFailed() }
        self.commands.append(.sync)
        return true
    }

    /// Queues the session's settings, when the run has a session, as the first statement of an
    /// implicit transaction. False when the run is over (the connection failed).
    private func queueSettings(tentative: Bool, pending: inout [String: String]) -> Bool {
        guard !self.settings.isEmpty else { return true }
        return self.queue(self.settings, tentative: tentative, pending: &pending, asSettings: true)
    }

    /// Queues `statements`, and the prepares of those not yet prepared (without session state,
    /// the statements are sent unnamed instead); with `asSettings`, as session settings whose
    /// results are dropped. False when the run is over (the connection failed).
    private func queue(
        _ statements: [BoundStatement], tentative: Bool, pending: inout [String: String], asSettings: Bool = false
    ) -> Bool {
        for statement in statements {
            let text = statement.sql.text
            let parameters: PostgresTextParameters
            do {
                parameters = try PostgresTextParameters(statement.parameters)
            } catch {
                // Nothing of this statement was sent: stop queueing these statements, and
                // fail (them) once the commands already queued are read back.
                self.fail(error, tentative: tentative)
                break
            }
            let name: String?
            switch self.connection.pipelinedName(for: text, parameters, pending: &pending, handle: self.handle) {
            case .unnamed: name = nil
            case .prepared(let prepared): name = prepared
            case .preparing(let newName, let key):
                self.commands.append(.prepare(name: newName, key: key, tentative: tentative))
                name = newName
            case .sendFailed: return self.sendFailed()
            }
            // Settings are not the request's statements (the thread path's are not counted either).
            if !asSettings { self.connection.statistics.recordStatement() }
            guard self.connection.send(text, prepared: name, parameters, handle: self.handle) == 1 else {
                return self.sendFailed()
            }
            self.commands.append(asSettings ? .settings(tentative: tentative) : .query(tentative: tentative))
        }
        return true
    }

    /// Sends what libpq has buffered; false when the run is over (the connection failed).
    private func flush() -> Bool {
        guard let pending = self.connection.flushOutput(self.handle) else {
            self.connectionFailed()
            return false
        }
        self.isFlushing = pending
        return true
    }

    private func sendFailed() -> Bool {
        // Nothing can be read back reliably after a failed send: give the connection up.
        self.connectionFailed()
        return false
    }

    // MARK: Reading

    /// Gets ready to read the current command: a statement with a row limit is read one row
    /// per result (single-row mode), which libpq sets per statement, just before its results.
    /// A shared pipeline calls it when the run's batch comes to its head.
    func startCommand() {
        guard self.current < self.commands.count, case .query(tentative: false) = self.commands[self.current],
            self.batch.rowLimit != nil
        else { return }
        _ = PQsetSingleRowMode(self.handle)
    }

    /// Whether the current command is a tentative statement (or its prepare).
    private var currentIsTentative: Bool {
        switch self.commands[self.current] {
        case .prepare(_, _, let tentative), .query(let tentative), .settings(let tentative): return tentative
        case .sync: return false
        }
    }

    /// Records the first failure of the batch's statements, or of its tentative ones (a lost
    /// connection fails the run, whichever statement notices it).
    private func fail(_ error: any Error, tentative: Bool) {
        let code = (error as? DatabaseError)?.code
        if tentative && code != .connectionLost && code != .notAnswering {
            if self.tentativeFailure == nil { self.tentativeFailure = error }
        } else if self.failure == nil {
            self.failure = error
        }
    }

    /// Whether the batch's statements, or its tentative ones, have failed already.
    private func hasFailed(tentative: Bool) -> Bool {
        (tentative ? self.tentativeFailure : self.failure) != nil
    }

    /// A result of the current command.
    private func read(_ result: OpaquePointer) {
        let status = PQresultStatus(result)
        let tentative = self.currentIsTentative
        switch (self.commands[self.current], status) {
        case (.prepare(let name, let key, _), PGRES_COMMAND_OK):
            self.connection.statementNames.prepared(key, as: name)
        case (.settings, PGRES_TUPLES_OK), (.settings, PGRES_SINGLE_TUPLE), (.settings, PGRES_COMMAND_OK):
            // Dropped. In single-row mode too: libpq resets that mode when a pipeline moves to
            // its next query, not when a pipeline starts, so the first query of a pipeline on a
            // connection whose last query was read in single-row mode is read in it as well.
            break
        case (.query, PGRES_TUPLES_OK), (.query, PGRES_SINGLE_TUPLE), (.query, PGRES_COMMAND_OK):
            if !self.hasFailed(tentative: tentative) {
                self.connection.decode(result, into: &self.collected, rowLimit: tentative ? nil : self.batch.rowLimit)
            }
        case (_, PGRES_PIPELINE_ABORTED):
            self.fail(DatabaseError(.other, message: "skipped: an earlier statement of the pipeline failed"), tentative: tentative)
        default:
            self.fail(self.connection.makeError(result), tentative: tentative)
        }
    }

    /// The current command (not a sync) has no more results.
    private func endCommand() {
        if case .query(let tentative) = self.commands[self.current], !self.hasFailed(tentative: tentative) {
            if let collected = self.collected {
                if tentative {
                    self.tentativeResults.append(collected)
                } else {
                    self.batchResults.append(collected)
                }
            } else {
                self.fail(DatabaseError(.other, message: "a statement of the pipeline returned no result"), tentative: tentative)
            }
        }
        self.collected = nil
        self.current += 1
        self.startCommand()
    }

    /// The batch is read through its sync: sends the next one or finishes. False when the
    /// run is over.
    private func endBatch() -> Bool {
        if !self.isShared { self.connection.noteTransactionState() }
        if self.failure == nil {
            self.results.append(self.tentativeFailure == nil ? self.batchResults + self.tentativeResults : self.batchResults)
            do {
                self.batch = try self.next(self.results)
            } catch {
                self.failure = error
            }
        }
        guard self.failure == nil, !self.batch.statements.isEmpty else {
            self.finish()
            return false
        }
        // Shared, the pipeline flushes and starts the batch once it is at its head.
        return self.isShared ? self.queueBatch() : self.send()
    }

    // MARK: Ending

    /// Ends the run's wait under the connection's answer deadline, if it set one.
    private func stopWaiting() {
        if self.setsDeadline {
            self.connection.answerDeadline.end()
            self.setsDeadline = false
        }
    }

    /// Leaves pipeline and non-blocking mode and records the outcome.
    private func finish() {
        if !self.isShared {
            self.stopWaiting()
            if PQexitPipelineMode(self.handle) != 1 || PQsetnonblocking(self.handle, 0) != 0 {
                self.connection.markBroken()
            }
            self.connection.stateMachine.eventDrivenEnded()
            self.connection.noteTransactionState()
        }
        if let failure = self.failure {
            self.outcome = .failure(failure)
        } else {
            self.outcome = .success(self.results)
        }
    }

    /// Ends the run with `error` without reading anything more: its shared pipeline is closed.
    func abandon(with error: any Error) {
        self.outcome = .failure(error)
    }

    /// The connection is lost or unusable: the run fails (with the database's own error when
    /// one arrived, such as a terminated backend's), and the pool discards the connection.
    func connectionFailed() {
        self.stopWaiting()
        let error = self.connection.makeError(nil)
        self.connection.markBroken()
        // A server that did not answer in time (the watchdog shut the socket) says so.
        let lost = error.code == .connectionLost || error.code == .notAnswering
            ? error : DatabaseError(.connectionLost, message: error.message)
        if let failure = self.failure as? DatabaseError, failure.code == .connectionLost, error.code != .notAnswering {
            self.outcome = .failure(failure)
        } else {
            self.outcome = .failure(lost)
        }
    }
}
