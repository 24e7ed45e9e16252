import SpoutCore

/// The states of one ``PostgresConnection`` and the transitions between them: a value without
/// I/O (no libpq, no C types), so every transition is testable without a server.
///
/// The connection owns one machine. Before and after each piece of I/O it reports an event to
/// the machine (a `mutating func`), and obeys the action the event returns: go ahead, fail
/// with the given error, or clean up in the way it names. The machine never calls back.
///
/// What the connection is doing is ``state``; only ``State/idle`` takes a new statement. Beside
/// it the machine tracks what the statements' results tell about the session: the open
/// transaction (``transaction``), the transactions seen to end (``transactionEpoch``), and the
/// settings in effect (``statementTimeout``, ``sessionReadOnly``).
///
/// | State | Entered by | Left by |
/// | --- | --- | --- |
/// | ``State/idle`` | the start, and each end event below | the events that enter a busy state |
/// | ``State/streaming`` | ``streamOpened()`` | ``streamEnded(cancelling:)`` |
/// | ``State/copying`` | ``copyStarted()`` | ``copyEnded(abandoning:)`` |
/// | ``State/eventDriven`` | ``eventDrivenStarted()`` | ``eventDrivenEnded()`` |
/// | ``State/fetching`` | ``fetchSent()`` | ``fetchReceived()``, ``fetchAbandoned(keepingTransaction:)`` |
/// | ``State/broken`` | ``connectionFailed()``, from any state but closed | ``closed()`` |
/// | ``State/closed`` | ``closed()``, from any state | — |
///
/// Rules the machine keeps:
/// - A statement, a stream, a bulk insert, a `FETCH` sent ahead or an event-driven run starts
///   only from ``State/idle``. In a busy state it is rejected with
///   ``SpoutCore/DatabaseError/Code/unsupported`` naming what holds the connection; once broken
///   or closed, with ``SpoutCore/DatabaseError/Code/connectionLost``.
/// - Each busy state is left only by its own end event; an end event in another state changes
///   nothing and asks for no clean-up.
/// - ``State/broken`` is left only by ``closed()``, and ``State/closed`` never.
/// - An implicit transaction exists only without session state; settings SET inside a
///   transaction are tracked only with session state (without it they are `SET LOCAL`).
///
/// The cancel flag (``PostgresConnection/cancel()`` from another thread) is not part of the
/// machine: it is shared across threads, and the machine is confined to the connection's.
struct PostgresConnectionStateMachine: Sendable, Equatable {
    /// What the connection is doing between two calls.
    enum State: Sendable, Equatable, CaseIterable {
        /// Takes a new statement.
        case idle
        /// A single-row-mode query has results left to read.
        case streaming
        /// A `COPY FROM STDIN` is open.
        case copying
        /// The reactor thread is running statements on it (``PostgresConnection/runEventDriven(_:then:completion:)``).
        case eventDriven
        /// A server cursor's next `FETCH` was sent ahead (``SpoutCore/QueryOptions/prefetch``);
        /// its result has not been read yet.
        case fetching
        /// Lost, or left in a protocol state it cannot recover from: the pool discards it.
        case broken
        /// Closed: the libpq connection is finished.
        case closed
    }

    /// libpq's transaction status after a result (`PQtransactionStatus`), without the C type.
    enum TransactionStatus: Sendable, Equatable, CaseIterable {
        /// No transaction is open.
        case idle
        /// A statement is still running: the status is not known yet.
        case active
        /// A transaction is open.
        case inTransaction
        /// A transaction is open and failed: only `ROLLBACK` ends it.
        case failed
        /// The connection is bad.
        case unknown
    }

    /// Who opened the transaction in progress.
    enum TransactionOpener: Sendable, Equatable {
        /// ``PostgresConnection/begin(readOnly:)`` or the caller's own SQL.
        case explicit
        /// Without session state, a statement run outside a transaction: committed by
        /// ``PostgresConnection/reset()`` or by the next ``PostgresConnection/begin(readOnly:)``.
        case implicit
    }

    /// The transaction the last result left open.
    enum Transaction: Sendable, Equatable {
        case none
        /// - Parameter settingsChanged: a setting was SET in it (with session state), so a
        ///   rollback may undo it: when it ends, the settings in effect are unknown.
        case open(TransactionOpener, settingsChanged: Bool)
    }

    /// The answer to an event that starts or continues a statement.
    enum StatementAction: Sendable {
        /// Go ahead (the transition has happened).
        case run
        /// Do nothing and throw this error (the state is unchanged).
        case fail(DatabaseError)
    }

    /// The I/O that ends a busy state, after the machine has left it.
    enum CleanupAction: Sendable, Equatable {
        /// Not in that state: nothing to do.
        case nothing
        /// Read and discard what is left. With `cancelIfRunning`, first ask the server to cancel
        /// the statement if its results have not all arrived.
        case drain(cancelIfRunning: Bool)
        /// End the `COPY` with an error, so nothing of it is stored, and read what is left.
        case failCopy
    }

    /// What ``PostgresConnection/reset()`` does first.
    enum ResetAction: Sendable, Equatable {
        /// Report failure: the connection is broken, closed, or held by the reactor.
        case refuse
        /// Close the open single-row cursor (cancelling the statement), then end the transaction.
        case closeStream
        /// Abandon the bulk insert, then end the transaction.
        case abandonCopy
        /// Drop the `FETCH` sent ahead, then end the transaction.
        case abandonFetch
        /// End the transaction.
        case endTransaction
    }

    /// How a transaction is ended when the connection goes back to the pool.
    enum TransactionEndAction: Sendable, Equatable {
        case nothing
        /// An implicit transaction: its statements ran as if in autocommit.
        case commit
        case rollback
    }

    /// How ``PostgresConnection/begin(readOnly:)`` opens a transaction.
    enum BeginAction: Sendable, Equatable {
        /// `BEGIN READ ONLY` or `BEGIN READ WRITE`.
        case begin(readOnly: Bool)
        /// Without session state: `COMMIT` first when `commitFirst` (an implicit transaction is
        /// open), then the `BEGIN` and, in the same round trip, `SET LOCAL` of the statement
        /// timeout and of the settings the decoding needs.
        case beginWithSettings(readOnly: Bool, commitFirst: Bool, statementTimeout: Int)
    }

    /// How a setting reaches the server.
    enum SettingAction: Sendable, Equatable {
        /// Already in effect, or only remembered for the next transaction.
        case nothing
        /// `SET`: for the session.
        case set
        /// `SET LOCAL`: for the open transaction (without session state).
        case setLocal
    }

    /// Whether state may outlive a transaction (named prepared statements, session settings);
    /// false behind a transaction pooler.
    let keepsSessionState: Bool
    private(set) var state: State = .idle
    private(set) var transaction: Transaction = .none
    /// Changes whenever an open transaction is seen to end; server cursors belong to one value.
    private(set) var transactionEpoch = 0
    /// The `statement_timeout` in effect in milliseconds (0: none), or nil when unknown.
    private(set) var statementTimeout: Int? = 0
    /// The `default_transaction_read_only` in effect, or nil when unknown.
    private(set) var sessionReadOnly: Bool?
    /// Whether the last `BEGIN` sent asked for a read-only transaction: what the open
    /// transaction is, once it began (nil: none sent yet).
    private(set) var transactionReadOnly: Bool?

    init(keepsSessionState: Bool) {
        self.keepsSessionState = keepsSessionState
    }

    // MARK: Questions

    /// Whether the pool must discard the connection.
    var isBroken: Bool {
        self.state == .broken || self.state == .closed
    }

    /// Whether a transaction is open, given libpq's current `status`: while a statement runs
    /// (``TransactionStatus/active``), whether the last result left one open.
    func isInTransaction(_ status: TransactionStatus) -> Bool {
        switch status {
        case .inTransaction, .failed: return true
        case .active: return self.transaction != .none
        case .idle, .unknown: return false
        }
    }

    /// Whether a statement about to run must open its transaction first: without session state,
    /// outside a transaction.
    func needsImplicitTransaction(_ status: TransactionStatus) -> Bool {
        !self.keepsSessionState && status == .idle
    }

    /// Whether the reactor can run statements with these settings now: with session state, idle,
    /// outside a transaction, and with the read-only setting and timeout already in effect.
    func canRunEventDriven(readOnly: Bool, statementTimeout milliseconds: Int?, status: TransactionStatus) -> Bool {
        guard self.keepsSessionState, self.state == .idle, self.sessionReadOnly == readOnly else { return false }
        if let milliseconds, max(0, milliseconds) != self.statementTimeout {
            return false
        }
        return status == .idle
    }

    // MARK: Statements

    /// A statement is about to be sent and read to its end (the connection stays idle).
    func statementRequested() -> StatementAction {
        switch self.state {
        case .idle:
            return .run
        case .streaming:
            return .fail(DatabaseError(
                .unsupported,
                message: "the connection is busy streaming a query in single-row mode; close that cursor first "
                    + "or run it with QueryOptions(interleaved: true)"))
        case .copying:
            return .fail(DatabaseError(.unsupported, message: "the connection is busy with a bulk insert; finish it first"))
        case .eventDriven:
            return .fail(DatabaseError(
                .unsupported, message: "the connection is busy running statements event-driven; wait for their completion"))
        case .fetching:
            return .fail(DatabaseError(
                .unsupported,
                message: "the connection is busy reading ahead a cursor opened with QueryOptions(prefetch: true); close it first"))
        case .broken:
            return .fail(DatabaseError(
                .connectionLost, message: "the connection is broken (lost, or left in a state it cannot recover from)"))
        case .closed:
            return .fail(DatabaseError(.connectionLost, message: "the connection is closed"))
        }
    }

    /// A result was read (or the connection gave up on one): records the transaction `status`
    /// it reports. When an open transaction is seen to end, the epoch changes, and settings SET
    /// inside it become unknown (a rollback may have undone them). A statement still running
    /// (``TransactionStatus/active``) tells nothing; a closed connection records nothing.
    mutating func resultRead(_ status: TransactionStatus) {
        guard status != .active, self.state != .closed else { return }
        let inTransaction = status == .inTransaction || status == .failed
        switch (self.transaction, inTransaction) {
        case (.open(_, let settingsChanged), false):
            self.transactionEpoch &+= 1
            if settingsChanged {
                self.statementTimeout = nil
                self.sessionReadOnly = nil
            }
            self.transaction = .none
        case (.none, true):
            self.transaction = .open(.explicit, settingsChanged: false)
        case (.open, true), (.none, false):
            break
        }
    }

    /// The connection is lost or unusable: it stays ``State/broken`` until closed.
    mutating func connectionFailed() {
        guard self.state != .closed else { return }
        self.state = .broken
    }

    /// The libpq connection is finished.
    mutating func closed() {
        self.state = .closed
    }

    // MARK: Single-row streams

    /// A single-row query was sent: the connection streams until ``streamEnded(cancelling:)``.
    mutating func streamOpened() -> StatementAction {
        self.enter(.streaming)
    }

    /// Whether the stream's next result may be read.
    var isStreaming: Bool {
        self.state == .streaming
    }

    /// The stream's cursor is done with it (finished, failed, or closed early with
    /// `cancelling`): the connection is idle again once the rest is drained. Report the
    /// transaction status after draining with ``resultRead(_:)``.
    mutating func streamEnded(cancelling: Bool) -> CleanupAction {
        guard self.state == .streaming else { return .nothing }
        self.state = .idle
        return .drain(cancelIfRunning: cancelling)
    }

    // MARK: Bulk inserts

    /// `COPY FROM STDIN` was accepted: the connection copies until ``copyEnded(abandoning:)``.
    mutating func copyStarted() -> StatementAction {
        self.enter(.copying)
    }

    /// COPY data, or the end of the COPY, is about to be sent.
    func copyDataRequested() -> StatementAction {
        guard self.state == .copying else {
            return .fail(DatabaseError(.other, message: "the bulk insert is no longer active"))
        }
        return .run
    }

    /// The COPY ended (its result read), or is `abandoning` (its rows must not be stored).
    /// Report the transaction status after the clean-up with ``resultRead(_:)``.
    mutating func copyEnded(abandoning: Bool) -> CleanupAction {
        guard self.state == .copying else { return .nothing }
        self.state = .idle
        return abandoning ? .failCopy : .drain(cancelIfRunning: false)
    }

    // MARK: Server cursors

    /// A statement on server cursor `name`, declared in the transaction of `epoch`, is about to
    /// be sent: only while idle and while that transaction lasts.
    func cursorStatementRequested(name: String, epoch: Int) -> StatementAction {
        if case .fail(let error) = self.statementRequested() {
            return .fail(error)
        }
        guard epoch == self.transactionEpoch else {
            return .fail(DatabaseError(.other, message: "the transaction of cursor \(name) has ended"))
        }
        return .run
    }

    /// A `FETCH` was sent ahead: the connection waits for it until ``fetchReceived()`` or
    /// ``fetchAbandoned(keepingTransaction:)``.
    mutating func fetchSent() -> StatementAction {
        self.enter(.fetching)
    }

    /// The result of the `FETCH` sent ahead is about to be read: the connection is idle again.
    mutating func fetchReceived() -> StatementAction {
        guard self.state == .fetching else {
            return .fail(DatabaseError(.unsupported, message: "no FETCH was sent ahead"))
        }
        self.state = .idle
        return .run
    }

    /// The rows of the `FETCH` sent ahead are no longer wanted. When the caller goes on in the
    /// transaction (`keepingTransaction`: the cursor was closed), the `FETCH`, at most one
    /// batch, is read to its end: cancelling it would fail the transaction if it still ran.
    /// Otherwise (the connection is being reset, the transaction ends anyway) it is cancelled if
    /// still running. Report the transaction status after draining with ``resultRead(_:)``.
    mutating func fetchAbandoned(keepingTransaction: Bool) -> CleanupAction {
        guard self.state == .fetching else { return .nothing }
        self.state = .idle
        return .drain(cancelIfRunning: !keepingTransaction)
    }

    /// Whether `CLOSE` of a server cursor declared in the transaction of `epoch` is to be sent,
    /// given libpq's current `status`: only while idle, in that transaction, and while it has
    /// not failed (otherwise the cursor is gone, or goes with the transaction).
    func cursorCanBeClosed(epoch: Int, status: TransactionStatus) -> Bool {
        self.state == .idle && epoch == self.transactionEpoch && status == .inTransaction
    }

    // MARK: Event-driven runs

    /// The reactor (or a blocking pipeline) takes the connection until ``eventDrivenEnded()``.
    mutating func eventDrivenStarted() -> StatementAction {
        self.enter(.eventDriven)
    }

    /// The event-driven run is over: the connection is idle again, unless it broke meanwhile.
    mutating func eventDrivenEnded() {
        guard self.state == .eventDriven else { return }
        self.state = .idle
    }

    // MARK: Transactions and settings

    /// ``PostgresConnection/begin(readOnly:)`` is about to run, with libpq's current `status`.
    func beginRequested(readOnly: Bool, status: TransactionStatus) -> BeginAction {
        guard !self.keepsSessionState else { return .begin(readOnly: readOnly) }
        var implicitIsOpen = false
        if case .open(.implicit, _) = self.transaction {
            implicitIsOpen = self.isInTransaction(status)
        }
        return .beginWithSettings(readOnly: readOnly, commitFirst: implicitIsOpen, statementTimeout: self.statementTimeout ?? 0)
    }

    /// A `BEGIN` asking for a read-only (or a read-write) transaction is about to be sent.
    mutating func transactionModeRequested(readOnly: Bool) {
        self.transactionReadOnly = readOnly
    }

    /// Whether the statements now running may write: the open transaction's mode when one is
    /// open (libpq's `status`), else the session's default; true when unknown.
    func wantsWrites(_ status: TransactionStatus) -> Bool {
        let readOnly = self.isInTransaction(status) ? (self.transactionReadOnly ?? self.sessionReadOnly) : self.sessionReadOnly
        return readOnly != true
    }

    /// A `BEGIN` succeeded; `implicit` when it was sent for a statement run outside a
    /// transaction without session state (``needsImplicitTransaction(_:)``). Call after
    /// ``resultRead(_:)`` has seen the transaction open.
    mutating func transactionBegun(implicit: Bool) {
        guard case .open(_, let settingsChanged) = self.transaction else { return }
        let opener: TransactionOpener = implicit && !self.keepsSessionState ? .implicit : .explicit
        self.transaction = .open(opener, settingsChanged: settingsChanged)
    }

    /// ``PostgresConnection/reset()`` was called.
    func resetRequested() -> ResetAction {
        switch self.state {
        case .idle: return .endTransaction
        case .streaming: return .closeStream
        case .copying: return .abandonCopy
        case .fetching: return .abandonFetch
        case .eventDriven, .broken, .closed: return .refuse
        }
    }

    /// How to end the transaction libpq reports (`status`) before the connection is reused.
    func transactionEndForReset(_ status: TransactionStatus) -> TransactionEndAction {
        if status == .inTransaction, case .open(.implicit, _) = self.transaction {
            return .commit
        }
        return status == .idle ? .nothing : .rollback
    }

    /// The statement timeout for the next statements is `milliseconds` (nil or negative: none),
    /// with libpq's current `status`. With session state the value in effect is unknown until
    /// ``statementTimeoutSet(_:)``; without it, outside a transaction, the value is only
    /// remembered for the next transaction.
    mutating func statementTimeoutRequested(_ milliseconds: Int?, status: TransactionStatus) -> SettingAction {
        let value = max(0, milliseconds ?? 0)
        guard value != self.statementTimeout else { return .nothing }
        guard self.keepsSessionState else {
            guard self.isInTransaction(status) else {
                self.statementTimeout = value
                return .nothing
            }
            return .setLocal
        }
        self.statementTimeout = nil
        return .set
    }

    /// The `SET` (or `SET LOCAL`) of the statement timeout to `milliseconds` succeeded.
    mutating func statementTimeoutSet(_ milliseconds: Int) {
        self.statementTimeout = milliseconds
        self.noteSettingChanged()
    }

    /// The session's default read-only setting for the next transactions is `readOnly`. With
    /// session state it is unknown until ``readOnlySet(_:)``; without it, it is only remembered
    /// (transactions are opened with it).
    mutating func readOnlyRequested(_ readOnly: Bool) -> SettingAction {
        guard readOnly != self.sessionReadOnly else { return .nothing }
        guard self.keepsSessionState else {
            self.sessionReadOnly = readOnly
            return .nothing
        }
        self.sessionReadOnly = nil
        return .set
    }

    /// The `SET default_transaction_read_only` to `readOnly` succeeded.
    mutating func readOnlySet(_ readOnly: Bool) {
        self.sessionReadOnly = readOnly
        self.noteSettingChanged()
    }

    // MARK: Helpers

    /// Moves from idle to `busy`, or rejects the event as ``statementRequested()`` would.
    private mutating func enter(_ busy: State) -> StatementAction {
        let action = self.statementRequested()
        if case .run = action {
            self.state = busy
        }
        return action
    }

    /// A session setting was SET: inside a transaction (with session state), a rollback may
    /// undo it.
    private mutating func noteSettingChanged() {
        guard self.keepsSessionState, case .open(let opener, _) = self.transaction else { return }
        self.transaction = .open(opener, settingsChanged: true)
    }
}
