import SpoutCore
import Testing

@testable import SpoutPostgres

/// Every transition of ``PostgresConnectionStateMachine``, legal and illegal, without a server;
/// ``PostgresDriverTests`` and the suites beside it run the same rules against PostgreSQL.
struct PostgresConnectionStateMachineTests {
    typealias Machine = PostgresConnectionStateMachine
    typealias State = PostgresConnectionStateMachine.State

    /// A write refused for read-only-ness means "a standby" only where the transaction (or,
    /// outside one, the session) was meant to write: a read-only transaction's refusal is the
    /// caller's mistake, not a failover.
    @Test func writesAreWantedByTheOpenTransactionsMode() {
        var machine = Machine(keepsSessionState: true)
        #expect(machine.wantsWrites(.idle), "unknown: may write")
        machine.transactionModeRequested(readOnly: true)
        #expect(!machine.wantsWrites(.failed))
        #expect(!machine.wantsWrites(.inTransaction))
        #expect(machine.wantsWrites(.idle), "outside the transaction, the session's default (unknown)")
        machine.transactionModeRequested(readOnly: false)
        #expect(machine.wantsWrites(.failed))
    }

    /// The states a statement is rejected in as `unsupported`, with what the message names.
    static let busyStates: [(State, String)] = [
        (.streaming, "streaming a query in single-row mode"),
        (.copying, "bulk insert"),
        (.eventDriven, "event-driven"),
        (.fetching, "prefetch"),
    ]

    /// A machine in `state`, reached through the transitions that lead there.
    static func machine(in state: State, keepsSessionState: Bool = true) -> Machine {
        var machine = Machine(keepsSessionState: keepsSessionState)
        let entered: Machine.StatementAction
        switch state {
        case .idle: return machine
        case .streaming: entered = machine.streamOpened()
        case .copying: entered = machine.copyStarted()
        case .eventDriven: entered = machine.eventDrivenStarted()
        case .fetching: entered = machine.fetchSent()
        case .broken:
            machine.connectionFailed()
            return machine
        case .closed:
            machine.closed()
            return machine
        }
        #expect(entered.isRun)
        return machine
    }

    /// Checks that `action` is the rejection of a new statement in `state`.
    static func expectRejection(_ action: Machine.StatementAction, in state: State, sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .fail(let error) = action else {
            Issue.record("\(state) accepted the event", sourceLocation: sourceLocation)
            return
        }
        switch state {
        case .idle:
            Issue.record("idle rejected the event: \(error)", sourceLocation: sourceLocation)
        case .broken:
            #expect(error.code == .connectionLost, sourceLocation: sourceLocation)
            #expect(error.message.contains("broken"), sourceLocation: sourceLocation)
        case .closed:
            #expect(error.code == .connectionLost, sourceLocation: sourceLocation)
            #expect(error.message == "the connection is closed", sourceLocation: sourceLocation)
        case .streaming, .copying, .eventDriven, .fetching:
            let named = Self.busyStates.first { $0.0 == state }!.1
            #expect(error.code == .unsupported, sourceLocation: sourceLocation)
            #expect(error.message.contains(named), "\(error.message)", sourceLocation: sourceLocation)
        }
    }

    // MARK: Starting statements

    @Test(arguments: State.allCases)
    func aStatementRunsOnlyWhenIdle(state: State) {
        let machine = Self.machine(in: state)
        let action = machine.statementRequested()
        if state == .idle {
            #expect(action.isRun)
        } else {
            Self.expectRejection(action, in: state)
        }
        #expect(machine.state == state)
    }

    /// The events that take the connection from idle to a busy state.
    enum Entry: CaseIterable, CustomStringConvertible {
        case streamOpened, copyStarted, eventDrivenStarted, fetchSent

        var target: State {
            switch self {
            case .streamOpened: .streaming
            case .copyStarted: .copying
            case .eventDrivenStarted: .eventDriven
            case .fetchSent: .fetching
            }
        }

        func apply(to machine: inout Machine) -> Machine.StatementAction {
            switch self {
            case .streamOpened: machine.streamOpened()
            case .copyStarted: machine.copyStarted()
            case .eventDrivenStarted: machine.eventDrivenStarted()
            case .fetchSent: machine.fetchSent()
            }
        }

        var description: String { "\(self.target)" }
    }

    @Test(arguments: Entry.allCases, State.allCases)
    func aBusyStateIsEnteredOnlyFromIdle(entry: Entry, state: State) {
        var machine = Self.machine(in: state)
        let action = entry.apply(to: &machine)
        if state == .idle {
            #expect(action.isRun)
            #expect(machine.state == entry.target)
        } else {
            Self.expectRejection(action, in: state)
            #expect(machine.state == state)
        }
    }

    // MARK: Ending busy states

    /// The events that leave a busy state for idle, with the clean-up they ask for.
    enum Exit: CaseIterable, CustomStringConvertible {
        case streamEnded, streamClosedEarly, copyEnded, copyAbandoned, cursorClosedWithAFetchAhead, fetchAbandonedByReset

        var source: State {
            switch self {
            case .streamEnded, .streamClosedEarly: .streaming
            case .copyEnded, .copyAbandoned: .copying
            case .cursorClosedWithAFetchAhead, .fetchAbandonedByReset: .fetching
            }
        }

        var cleanUp: Machine.CleanupAction {
            switch self {
            // Closing the server cursor keeps the transaction: the FETCH is read, not cancelled
            // (a cancel would fail the transaction).
            case .streamEnded, .copyEnded, .cursorClosedWithAFetchAhead: .drain(cancelIfRunning: false)
            case .streamClosedEarly, .fetchAbandonedByReset: .drain(cancelIfRunning: true)
            case .copyAbandoned: .failCopy
            }
        }

        func apply(to machine: inout Machine) -> Machine.CleanupAction {
            switch self {
            case .streamEnded: machine.streamEnded(cancelling: false)
            case .streamClosedEarly: machine.streamEnded(cancelling: true)
            case .copyEnded: machine.copyEnded(abandoning: false)
            case .copyAbandoned: machine.copyEnded(abandoning: true)
            case .cursorClosedWithAFetchAhead: machine.fetchAbandoned(keepingTransaction: true)
            case .fetchAbandonedByReset: machine.fetchAbandoned(keepingTransaction: false)
            }
        }

        var description: String {
            switch self {
            case .streamEnded: "streamEnded(cancelling: false)"
            case .streamClosedEarly: "streamEnded(cancelling: true)"
            case .copyEnded: "copyEnded(abandoning: false)"
            case .copyAbandoned: "copyEnded(abandoning: true)"
            case .cursorClosedWithAFetchAhead: "fetchAbandoned(keepingTransaction: true)"
            case .fetchAbandonedByReset: "fetchAbandoned(keepingTransaction: false)"
            }
        }
    }

    @Test(arguments: Exit.allCases, State.allCases)
    func aBusyStateIsLeftOnlyByItsOwnEnd(exit: Exit, state: State) {
        var machine = Self.machine(in: state)
        let action = exit.apply(to: &machine)
        if state == exit.source {
            #expect(action == exit.cleanUp)
            #expect(machine.state == .idle)
        } else {
            #expect(action == .nothing)
            #expect(machine.state == state)
        }
    }

    @Test(arguments: State.allCases)
    func onlyAStreamReadsResults(state: State) {
        var machine = Self.machine(in: state)
        #expect(machine.isStreaming == (state == .streaming))
        _ = machine.streamEnded(cancelling: false)
        #expect(!machine.isStreaming)
    }

    @Test(arguments: State.allCases)
    func copyDataIsSentOnlyWhileCopying(state: State) {
        let machine = Self.machine(in: state)
        let action = machine.copyDataRequested()
        if state == .copying {
            #expect(action.isRun)
        } else {
            #expect(action.error?.code == .other)
            #expect(action.error?.message == "the bulk insert is no longer active")
        }
        #expect(machine.state == state)
    }

    @Test(arguments: State.allCases)
    func aFetchIsReceivedOnlyWhenOneWasSentAhead(state: State) {
        var machine = Self.machine(in: state)
        let action = machine.fetchReceived()
        if state == .fetching {
            #expect(action.isRun)
            #expect(machine.state == .idle)
        } else {
            #expect(action.error?.code == .unsupported)
            #expect(action.error?.message == "no FETCH was sent ahead")
            #expect(machine.state == state)
        }
    }

    @Test(arguments: State.allCases)
    func anEventDrivenRunEndsOnlyItsOwnState(state: State) {
        var machine = Self.machine(in: state)
        machine.eventDrivenEnded()
        #expect(machine.state == (state == .eventDriven ? .idle : state))
    }

    // MARK: Breaking and closing

    @Test(arguments: State.allCases)
    func aFailureBreaksEveryStateButClosed(state: State) {
        var machine = Self.machine(in: state)
        #expect(machine.isBroken == (state == .broken || state == .closed))
        machine.connectionFailed()
        #expect(machine.state == (state == .closed ? .closed : .broken))
        #expect(machine.isBroken)
    }

    @Test(arguments: State.allCases)
    func closingEndsEveryState(state: State) {
        var machine = Self.machine(in: state)
        machine.closed()
        #expect(machine.state == .closed)
        #expect(machine.isBroken)
        Self.expectRejection(machine.statementRequested(), in: .closed)
    }

    /// Nothing but closing leaves the broken state.
    @Test func brokenIsLeftOnlyByClosing() {
        var machine = Self.machine(in: .broken)
        for entry in Entry.allCases {
            Self.expectRejection(entry.apply(to: &machine), in: .broken)
        }
        for exit in Exit.allCases {
            #expect(exit.apply(to: &machine) == .nothing)
        }
        #expect(machine.fetchReceived().error?.code == .unsupported)
        machine.eventDrivenEnded()
        machine.resultRead(.idle)
        #expect(machine.state == .broken)
        machine.closed()
        machine.connectionFailed()
        #expect(machine.state == .closed)
    }

    /// A connection that breaks while busy is not made idle by the end of what it was doing.
    @Test(arguments: Entry.allCases)
    func breakingWhileBusyOutlastsTheEndOfTheWork(entry: Entry) {
        var machine = Self.machine(in: entry.target)
        machine.connectionFailed()
        for exit in Exit.allCases {
            #expect(exit.apply(to: &machine) == .nothing)
        }
        #expect(machine.fetchReceived().error?.code == .unsupported)
        machine.eventDrivenEnded()
        #expect(machine.state == .broken)
    }

    // MARK: Reset

    @Test(arguments: State.allCases)
    func resetCleansUpWhatTheStateHolds(state: State) {
        let machine = Self.machine(in: state)
        let expected: Machine.ResetAction =
            switch state {
            case .idle: .endTransaction
            case .streaming: .closeStream
            case .copying: .abandonCopy
            case .fetching: .abandonFetch
            case .eventDriven, .broken, .closed: .refuse
            }
        #expect(machine.resetRequested() == expected)
        #expect(machine.state == state)
    }

    @Test(arguments: Machine.TransactionStatus.allCases)
    func resetRollsBackAnExplicitTransaction(status: Machine.TransactionStatus) {
        var machine = Self.machine(in: .idle)
        machine.resultRead(.inTransaction)
        machine.transactionBegun(implicit: false)
        #expect(machine.transactionEndForReset(status) == (status == .idle ? .nothing : .rollback))
    }

    /// Without session state, an implicit transaction is committed (its statements ran as in
    /// autocommit), unless it failed.
    @Test(arguments: Machine.TransactionStatus.allCases)
    func resetCommitsAnImplicitTransaction(status: Machine.TransactionStatus) {
        var machine = Self.machine(in: .idle, keepsSessionState: false)
        machine.resultRead(.inTransaction)
        machine.transactionBegun(implicit: true)
        #expect(machine.transaction == .open(.implicit, settingsChanged: false))
        let expected: Machine.TransactionEndAction =
            switch status {
            case .idle: .nothing
            case .inTransaction: .commit
            case .active, .failed, .unknown: .rollback
            }
        #expect(machine.transactionEndForReset(status) == expected)
    }

    // MARK: Transactions

    @Test func resultsOpenAndEndTransactionsAndEachEndChangesTheEpoch() {
        var machine = Self.machine(in: .idle)
        machine.resultRead(.idle)
        #expect(machine.transaction == .none)
        #expect(machine.transactionEpoch == 0)
        machine.resultRead(.inTransaction)
        #expect(machine.transaction == .open(.explicit, settingsChanged: false))
        machine.resultRead(.failed)
        #expect(machine.transaction == .open(.explicit, settingsChanged: false))
        #expect(machine.transactionEpoch == 0)
        machine.resultRead(.idle)
        #expect(machine.transaction == .none)
        #expect(machine.transactionEpoch == 1)
        machine.resultRead(.idle)
        #expect(machine.transactionEpoch == 1, "only an end changes the epoch")
        machine.resultRead(.inTransaction)
        machine.resultRead(.unknown)
        #expect(machine.transaction == .none, "a bad connection has no transaction")
        #expect(machine.transactionEpoch == 2)
    }

    @Test func aRunningStatementTellsNothing() {
        var machine = Self.machine(in: .idle)
        machine.resultRead(.inTransaction)
        machine.resultRead(.active)
        #expect(machine.transaction == .open(.explicit, settingsChanged: false))
        #expect(machine.transactionEpoch == 0)
    }

    @Test func aClosedConnectionRecordsNothing() {
        var machine = Self.machine(in: .idle)
        machine.resultRead(.inTransaction)
        machine.closed()
        machine.resultRead(.idle)
        #expect(machine.transaction == .open(.explicit, settingsChanged: false))
        #expect(machine.transactionEpoch == 0)
    }

    @Test(arguments: Machine.TransactionStatus.allCases, [false, true])
    func inTransactionFollowsLibpqAndTheLastResultWhileRunning(status: Machine.TransactionStatus, lastLeftOneOpen: Bool) {
        var machine = Self.machine(in: .idle)
        if lastLeftOneOpen { machine.resultRead(.inTransaction) }
        let expected =
            switch status {
            case .inTransaction, .failed: true
            case .active: lastLeftOneOpen
            case .idle, .unknown: false
            }
        #expect(machine.isInTransaction(status) == expected)
    }

    @Test(arguments: Machine.TransactionStatus.allCases, [false, true])
    func onlyASessionlessStatementOutsideATransactionOpensOne(status: Machine.TransactionStatus, keepsSessionState: Bool) {
        let machine = Self.machine(in: .idle, keepsSessionState: keepsSessionState)
        #expect(machine.needsImplicitTransaction(status) == (!keepsSessionState && status == .idle))
    }

    @Test(arguments: [false, true])
    func beginWithSessionStateIsPlain(readOnly: Bool) {
        var machine = Self.machine(in: .idle)
        #expect(machine.beginRequested(readOnly: readOnly, status: .idle) == .begin(readOnly: readOnly))
        machine.resultRead(.inTransaction)
        machine.transactionBegun(implicit: true)
        #expect(machine.transaction == .open(.explicit, settingsChanged: false), "implicit transactions need a sessionless connection")
    }

    @Test func beginWithoutSessionStateCarriesTheSettingsAndCommitsAnImplicitTransactionFirst() throws {
        var machine = Self.machine(in: .idle, keepsSessionState: false)
        #expect(machine.statementTimeoutRequested(1_500, status: .idle) == .nothing)
        #expect(
            machine.beginRequested(readOnly: true, status: .idle)
                == .beginWithSettings(readOnly: true, commitFirst: false, statementTimeout: 1_500))
        // A statement outside a transaction opened one implicitly.
        machine.resultRead(.inTransaction)
        machine.transactionBegun(implicit: true)
        #expect(
            machine.beginRequested(readOnly: false, status: .inTransaction)
                == .beginWithSettings(readOnly: false, commitFirst: true, statementTimeout: 1_500))
        #expect(
            machine.beginRequested(readOnly: false, status: .failed)
                == .beginWithSettings(readOnly: false, commitFirst: true, statementTimeout: 1_500))
        // The server already ended it (idle): nothing to commit.
        #expect(
            machine.beginRequested(readOnly: false, status: .idle)
                == .beginWithSettings(readOnly: false, commitFirst: false, statementTimeout: 1_500))
        // An explicit transaction is never committed by begin.
        machine.transactionBegun(implicit: false)
        #expect(
            machine.beginRequested(readOnly: false, status: .inTransaction)
                == .beginWithSettings(readOnly: false, commitFirst: false, statementTimeout: 1_500))
    }

    @Test func transactionBegunOutsideATransactionChangesNothing() {
        var machine = Self.machine(in: .idle, keepsSessionState: false)
        machine.transactionBegun(implicit: true)
        #expect(machine.transaction == .none)
    }

    @Test func theEndOfAnImplicitTransactionForgetsIt() {
        var machine = Self.machine(in: .idle, keepsSessionState: false)
        machine.resultRead(.inTransaction)
        machine.transactionBegun(implicit: true)
        machine.resultRead(.idle)
        #expect(machine.transaction == .none)
        machine.resultRead(.inTransaction)
        #expect(machine.transaction == .open(.explicit, settingsChanged: false))
    }

    // MARK: Server cursors

    @Test(arguments: State.allCases)
    func aCursorStatementRunsOnlyWhenIdleAndInItsTransaction(state: State) {
        var machine = Self.machine(in: state)
        let current = machine.cursorStatementRequested(name: "spout_c1", epoch: 0)
        if state == .idle {
            #expect(current.isRun)
        } else {
            Self.expectRejection(current, in: state)
        }
        machine.resultRead(.inTransaction)
        machine.resultRead(.idle)
        let stale = machine.cursorStatementRequested(name: "spout_c1", epoch: 0)
        if state == .idle {
            #expect(stale.error?.code == .other)
            #expect(stale.error?.message == "the transaction of cursor spout_c1 has ended")
            #expect(machine.cursorStatementRequested(name: "spout_c2", epoch: 1).isRun)
        } else if state != .closed {
            Self.expectRejection(stale, in: state)
        }
    }

    @Test(arguments: State.allCases, Machine.TransactionStatus.allCases)
    func aCursorIsClosedOnlyWhileIdleInItsLiveTransaction(state: State, status: Machine.TransactionStatus) {
        var machine = Self.machine(in: state)
        machine.resultRead(.inTransaction)
        let epoch = machine.transactionEpoch
        #expect(machine.cursorCanBeClosed(epoch: epoch, status: status) == (state == .idle && status == .inTransaction))
        #expect(!machine.cursorCanBeClosed(epoch: epoch + 1, status: status), "another transaction's cursor")
    }

    // MARK: Event-driven runs

    @Test func anEventDrivenRunNeedsTheSettingsInEffectOutsideATransaction() {
        var machine = Self.machine(in: .idle)
        #expect(!machine.canRunEventDriven(readOnly: true, statementTimeout: nil, status: .idle), "read-only unknown")
        #expect(machine.readOnlyRequested(true) == .set)
        machine.readOnlySet(true)
        #expect(machine.statementTimeoutRequested(1_500, status: .idle) == .set)
        machine.statementTimeoutSet(1_500)
        #expect(machine.canRunEventDriven(readOnly: true, statementTimeout: nil, status: .idle))
        #expect(machine.canRunEventDriven(readOnly: true, statementTimeout: 1_500, status: .idle))
        #expect(!machine.canRunEventDriven(readOnly: true, statementTimeout: 2_000, status: .idle))
        #expect(!machine.canRunEventDriven(readOnly: false, statementTimeout: nil, status: .idle))
        for status in Machine.TransactionStatus.allCases where status != .idle {
            #expect(!machine.canRunEventDriven(readOnly: true, statementTimeout: nil, status: status))
        }
        #expect(machine.statementTimeoutRequested(-5, status: .idle) == .set)
        machine.statementTimeoutSet(0)
        #expect(machine.canRunEventDriven(readOnly: true, statementTimeout: -1, status: .idle), "negative is none")
        #expect(machine.canRunEventDriven(readOnly: true, statementTimeout: 0, status: .idle))
    }

    @Test(arguments: State.allCases)
    func anEventDrivenRunStartsOnlyFromIdle(state: State) {
        var machine = Self.machine(in: state)
        if state == .idle {
            #expect(machine.readOnlyRequested(true) == .set)
        }
        machine.readOnlySet(true)
        #expect(machine.canRunEventDriven(readOnly: true, statementTimeout: nil, status: .idle) == (state == .idle))
    }

    @Test func anEventDrivenRunNeedsSessionState() {
        var machine = Self.machine(in: .idle, keepsSessionState: false)
        #expect(machine.readOnlyRequested(true) == .nothing)
        #expect(machine.sessionReadOnly == true)
        #expect(!machine.canRunEventDriven(readOnly: true, statementTimeout: nil, status: .idle))
    }

    // MARK: Settings

    @Test func withSessionStateASettingIsUnknownUntilItsSetSucceeds() {
        var machine = Self.machine(in: .idle)
        #expect(machine.statementTimeout == 0)
        #expect(machine.statementTimeoutRequested(nil, status: .idle) == .nothing, "already none")
        #expect(machine.statementTimeoutRequested(-3, status: .idle) == .nothing, "negative is none")
        #expect(machine.statementTimeoutRequested(250, status: .idle) == .set)
        #expect(machine.statementTimeout == nil)
        // The SET failed: a retry sends it again.
        #expect(machine.statementTimeoutRequested(250, status: .idle) == .set)
        machine.statementTimeoutSet(250)
        #expect(machine.statementTimeout == 250)
        #expect(machine.statementTimeoutRequested(250, status: .idle) == .nothing)

        #expect(machine.sessionReadOnly == nil)
        #expect(machine.readOnlyRequested(false) == .set)
        #expect(machine.sessionReadOnly == nil)
        machine.readOnlySet(false)
        #expect(machine.sessionReadOnly == false)
        #expect(machine.readOnlyRequested(false) == .nothing)
        #expect(machine.transaction == .none, "outside a transaction nothing can undo them")
    }

    /// A rollback may undo what was SET in the transaction: its end makes the settings unknown.
    @Test(arguments: [false, true])
    func settingsSetInATransactionAreUnknownAfterIt(readOnlySetting: Bool) {
        var machine = Self.machine(in: .idle)
        machine.readOnlySet(true)
        machine.statementTimeoutSet(100)
        machine.resultRead(.inTransaction)
        if readOnlySetting {
            #expect(machine.readOnlyRequested(false) == .set)
            machine.readOnlySet(false)
        } else {
            #expect(machine.statementTimeoutRequested(200, status: .inTransaction) == .set)
            machine.statementTimeoutSet(200)
        }
        #expect(machine.transaction == .open(.explicit, settingsChanged: true))
        machine.resultRead(.idle)
        #expect(machine.statementTimeout == nil)
        #expect(machine.sessionReadOnly == nil)
        #expect(machine.transaction == .none)
    }

    @Test func settingsOfATransactionWithoutChangesOutliveIt() {
        var machine = Self.machine(in: .idle)
        machine.readOnlySet(true)
        machine.statementTimeoutSet(100)
        machine.resultRead(.inTransaction)
        machine.resultRead(.idle)
        #expect(machine.statementTimeout == 100)
        #expect(machine.sessionReadOnly == true)
    }

    @Test func withoutSessionStateSettingsAreRememberedOrSetLocally() {
        var machine = Self.machine(in: .idle, keepsSessionState: false)
        #expect(machine.readOnlyRequested(true) == .nothing)
        #expect(machine.sessionReadOnly == true)
        #expect(machine.statementTimeoutRequested(300, status: .idle) == .nothing)
        #expect(machine.statementTimeout == 300)
        machine.resultRead(.inTransaction)
        #expect(machine.statementTimeoutRequested(400, status: .inTransaction) == .setLocal)
        #expect(machine.statementTimeout == 300, "known until the SET LOCAL succeeds")
        machine.statementTimeoutSet(400)
        #expect(machine.statementTimeout == 400)
        #expect(machine.transaction == .open(.explicit, settingsChanged: false), "SET LOCAL ends with the transaction anyway")
        machine.resultRead(.idle)
        #expect(machine.statementTimeout == 400)
        #expect(machine.sessionReadOnly == true)
    }

    // MARK: Statement names

    @Test func namesAreNeverReused() {
        var names = PostgresStatementNames()
        let first = names.reservePreparedName()
        #expect(first == "spout_1")
        names.prepared("SELECT 1", as: first)
        // A PREPARE that failed leaves its name unrecorded, and unused.
        #expect(names.reservePreparedName() == "spout_2")
        #expect(names.reservePreparedName() == "spout_3")
        #expect(names.prepared == ["SELECT 1": "spout_1"])
        #expect(names.nextCursorName() == "spout_c1")
        #expect(names.nextCursorName() == "spout_c2")
    }
}

extension PostgresConnectionStateMachine.StatementAction {
    var isRun: Bool {
        if case .run = self { return true }
        return false
    }

    var error: DatabaseError? {
        if case .fail(let error) = self { return error }
        return nil
    }
}
