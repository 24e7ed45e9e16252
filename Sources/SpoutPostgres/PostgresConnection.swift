import CLibPQ
import SpoutCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One libpq connection, configured for Spout (UTF-8, ISO dates, UTC, exact floats).
///
/// Contract (beyond ``DatabaseConnection``):
/// - Parameters are sent in text format with type OID 0, so the server infers their types;
///   the SQL may cast them (`$1::int8[]`). Arrays are sent as array literals, bytes as `\x` hex,
///   timestamps as UTC with `+00`. A text value containing NUL throws
///   ``SpoutCore/DatabaseError/Code/invalidValue``.
/// - Values are read in text format: see the mapping on ``SpoutCore/SQLValue``. `date` and
///   `timestamp` `infinity` / `-infinity` read as `.null`; BC dates and years past 9999 are
///   converted; unknown type OIDs (enums, `interval`, ...) read as `.text`.
/// - Statements are prepared once per connection (`spout_1`, `spout_2`, ...), keyed by
///   `ParsedSQL.text`, and reused by ``query(_:_:options:)`` and ``execute(_:_:)``.
/// - A query without `interleaved` streams in libpq single-row mode: at most one row is in
///   memory, and the connection is busy until the cursor ends or is closed; any other call
///   meanwhile throws ``SpoutCore/DatabaseError/Code/unsupported``. Closing such a cursor early
///   cancels the statement on the server (which aborts an open transaction if the statement
///   was still running) and drains what was already sent.
/// - An `interleaved` query reads through `DECLARE ... NO SCROLL CURSOR` + `FETCH batchSize`
///   inside the caller's transaction; the connection is free between batches.
/// - ``setReadOnly(_:)`` sets `default_transaction_read_only` (only when it changes), so a
///   read-only lease reads without a transaction; ``begin(readOnly:)`` says `READ ONLY` or
///   `READ WRITE` explicitly.
/// - Without session state (``keepsSessionState`` false, for a transaction pooler such as
///   PgBouncer in `pool_mode = transaction`) nothing the connection relies on outlives a
///   transaction: statements are sent unnamed (`PQsendQueryParams`), never prepared by name;
///   the read-only setting, the statement timeout and the session settings Spout's decoding
///   needs are applied per transaction (`BEGIN READ ONLY` + `SET LOCAL ...`, one round trip);
///   and a statement outside a transaction opens one (*implicit*: committed by ``reset()``,
///   or ended by the next ``begin(readOnly:)``). Session-level SETs are limited to the
///   parameters poolers carry over between server connections (client_encoding, DateStyle,
///   TimeZone).
/// - ``SpoutCore/QueryStatistics/recordStatement()`` is called once per ``query(_:_:options:)``,
///   ``execute(_:_:)``, ``executeScript(_:)`` and ``bulkInsert(into:columns:)``; never for
///   FETCH, CLOSE, BEGIN, COMMIT, ROLLBACK or SET.
/// - The legal states (idle, streaming, copying, event-driven, fetching ahead, broken, closed),
///   the transaction tracked from each result, the settings in effect, and which call is
///   rejected in which state, with which error, are ``PostgresConnectionStateMachine``'s: the
///   connection asks it before each piece of I/O, tells it what happened after, and obeys its
///   answer. A broken connection takes no statement (``SpoutCore/DatabaseError/Code/connectionLost``)
///   until the pool closes it.
// @unchecked Sendable: the connection is confined to one thread at a time by the pool (see
// `DatabaseConnection`), so its mutable state is never touched concurrently. `cancel()` is the
// only cross-thread entry point; it reads only `cancelState`, which is guarded by a `Mutex`, and
// takes a reference to the `PostgresCancelHandle` under that lock, so the `PGcancel` it uses is
// freed only after its last user is done, however `close()` races with it.
public final class PostgresConnection: DatabaseConnection, @unchecked Sendable {
    /// The state `cancel()` may touch from another thread.
    struct CancelState: Sendable {
        /// libpq's cancel handle; nil once the connection is closed.
        var handle: PostgresCancelHandle?
        /// Set by `cancel()`; cleared when a statement starts. Tells a cancel from a timeout.
        var requested = false
    }

    public var dialect: SQLDialect { .postgres }

    /// Children in one `LATERAL` query per window, and a parent's children in one round trip.
    public var childQueries: any ChildQueryStrategy { PostgresChildQueries() }

    /// The libpq connection (`PGconn *`); nil once closed.
    private(set) var handle: OpaquePointer?
    let statistics: QueryStatistics
    private let cancelState: Mutex<CancelState>

    /// What the connection is doing, the transaction it is in and the settings in effect.
    var stateMachine: PostgresConnectionStateMachine
    /// The names of the prepared statements and server cursors.
    var statementNames = PostgresStatementNames()
    /// Exchanges with the server so far (statements, pipelines, fetches, transaction control
    /// and settings, each sent and waited for once): how tests tell what a request costs in
    /// latency, where ``SpoutCore/QueryStatistics`` counts the request's statements.
    private(set) var roundTrips = 0
    /// The server the connection reached, `host:port` (libpq's `PQhost` and `PQport`: with a
    /// multi-host URL, the host it settled on; a Unix socket's directory as the host).
    public let serverAddress: String?
    /// The `application_name` the server reported for the session when it opened: what a
    /// traced transaction's name follows (``tracedApplicationName(_:)``).
    let applicationName: String
    /// The cursor of the single-row query in progress: ``reset()`` closes it, so that it never
    /// reads the results of a later statement.
    weak var activeStream: PostgresSingleRowCursor?
    /// The inserter of the `COPY` in progress: ``reset()`` abandons it.
    weak var activeCopy: PostgresBulkInserter?
    /// The descriptions of this connection's results so far, for the next results like them.
    var resultDescriptions = PostgresDescriptionMemo()
    /// How long a wait for the server's answer may last (``awaitingAnswer(statements:_:)``).
    let answerDeadline: PostgresAnswerDeadline

    /// Whether state may outlive a transaction (named prepared statements, session settings);
    /// false behind a transaction pooler.
    var keepsSessionState: Bool { self.stateMachine.keepsSessionState }
    /// `sql.text` → prepared statement name.
    var preparedStatements: [String: String] { self.statementNames.prepared }

    /// The statements run once on every new connection.
    static let sessionSetup = PostgresConnection.pooledSessionSetup + "; " + PostgresConnection.unpooledSettings.map { "SET \($0)" }.joined(separator: "; ")

    /// The session settings a transaction pooler tracks per client and restores on every
    /// server connection it lends (PgBouncer: client_encoding, DateStyle, TimeZone).
    static let pooledSessionSetup = "SET client_encoding = 'UTF8'; SET DateStyle = 'ISO, YMD'; SET TimeZone = 'UTC'"

    /// Settings the decoding and the planning rely on that poolers do not carry over: without
    /// session state each transaction sets them `LOCAL` (with DateStyle and TimeZone, in case
    /// the pooler does not carry those either).
    ///
    /// `cursor_tuple_fraction = 1`: Spout's server-side cursors are streams read to their last
    /// row, so they are planned for all rows, like any other statement. The default (0.1)
    /// plans for the first tenth, which favours walking an `ORDER BY` index and filtering row
    /// by row over finding the few matching rows by another index and sorting them
    /// (docs/benchmarks.md, "Filters"). It affects `DECLARE ... CURSOR` only.
    static let unpooledSettings = [
        "extra_float_digits = 1", "IntervalStyle = 'iso_8601'", "bytea_output = 'hex'", "cursor_tuple_fraction = 1",
    ]
    static let transactionSettings = (PostgresConnection.unpooledSettings + ["DateStyle = 'ISO, YMD'", "TimeZone = 'UTC'"])
        .map { "SET LOCAL \($0)" }

    /// Takes ownership of an open `PGconn` and configures its session. On failure the
    /// connection is finished and a ``SpoutCore/DatabaseError`` is thrown.
    /// - Parameters:
    ///   - keepsSessionState: false behind a transaction pooler (see the type's contract).
    ///   - answerGraceMilliseconds: how long past the statement timeout in effect a wait for the
    ///     server's answer may last (``PostgresAnswerDeadline``); 0 for no limit. The session
    ///     setup, which runs before any statement timeout, may wait twice this.
    init(
        connection: OpaquePointer, statistics: QueryStatistics, keepsSessionState: Bool = true, answerGraceMilliseconds: Int = 0
    ) throws {
        // Notices (WARNING: there is no transaction in progress, ...) are not errors; libpq
        // would print them on stderr.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        let deadline = PostgresAnswerDeadline(socket: PQsocket(connection), graceMilliseconds: answerGraceMilliseconds)
        deadline.setStatementTimeout(milliseconds: answerGraceMilliseconds)
        let result = deadline.bounding { PQexec(connection, keepsSessionState ? Self.sessionSetup : Self.pooledSessionSetup) }
        deadline.setStatementTimeout(milliseconds: 0)
        let succeeded = result.map { PQresultStatus($0) == PGRES_COMMAND_OK } ?? false
        var message = PostgresErrorMapping.message(result.map { PQresultErrorMessage($0) } ?? PQerrorMessage(connection))
        PQclear(result)
        guard succeeded, let cancel = PQgetCancel(connection) else {
            if deadline.hasExpired { message = "the server did not answer within \(2 * answerGraceMilliseconds) ms" }
            deadline.retire()
            PQfinish(connection)
            throw DatabaseError(.connectionFailed, message: "session setup failed: \(message)")
        }
        self.answerDeadline = deadline
        self.handle = connection
        self.statistics = statistics
        self.applicationName = PQparameterStatus(connection, "application_name").map { String(cString: $0) } ?? ""
        self.serverAddress = Self.address(of: connection)
        self.stateMachine = PostgresConnectionStateMachine(keepsSessionState: keepsSessionState)
        self.cancelState = Mutex(CancelState(handle: PostgresCancelHandle(cancel)))
    }

    deinit {
        self.close()
    }

    /// `host:port` of an open connection (`[host]:port` for an IPv6 address); nil when libpq
    /// knows no host.
    private static func address(of connection: OpaquePointer) -> String? {
        guard let host = PQhost(connection).map({ String(cString: $0) }), !host.isEmpty else { return nil }
        let port = PQport(connection).map { String(cString: $0) } ?? ""
        let shownHost = host.contains(":") && !host.hasPrefix("/") ? "[\(host)]" : host
        return port.isEmpty ? shownHost : "\(shownHost):\(port)"
    }

    // MARK: State

    public var isBroken: Bool {
        self.stateMachine.isBroken
    }

    public func isAlive() -> Bool {
        guard let handle = self.handle, !self.stateMachine.isBroken else { return false }
        guard self.stateMachine.state == .idle else { return true }
        // Readable while idle: the server sent something unasked. A server that terminates the
        // session sends its FATAL message, then closes; PQconsumeInput reads the message
        // without blocking, and reading again meets the end of file (it then returns 0). A
        // notice or parameter status leaves the socket quiet after one read.
        for _ in 0..<4 {
            var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 0) > 0 else { return true }
            if PQconsumeInput(handle) == 0 || PQstatus(handle) == CONNECTION_BAD {
                self.markBroken()
                return false
            }
        }
        return true
    }

    public var isInTransaction: Bool {
        self.stateMachine.isInTransaction(self.transactionStatus)
    }

    /// libpq's transaction status (``PostgresConnectionStateMachine/TransactionStatus/unknown``
    /// once closed).
    var transactionStatus: PostgresConnectionStateMachine.TransactionStatus {
        guard let handle = self.handle else { return .unknown }
        switch PQtransactionStatus(handle) {
        case PQTRANS_IDLE: return .idle
        case PQTRANS_ACTIVE: return .active
        case PQTRANS_INTRANS: return .inTransaction
        case PQTRANS_INERROR: return .failed
        default: return .unknown
        }
    }

    /// The connection, when it can take a new statement now.
    /// - Throws: the state machine's rejection (``PostgresConnectionStateMachine/statementRequested()``):
    ///   ``SpoutCore/DatabaseError/Code/unsupported`` while a cursor, a bulk insert or an
    ///   event-driven run holds it, ``SpoutCore/DatabaseError/Code/connectionLost`` once broken
    ///   or closed.
    func idleHandle() throws -> OpaquePointer {
        try self.obey(self.stateMachine.statementRequested())
        return try self.openHandle()
    }

    /// The libpq connection, unless closed.
    func openHandle() throws -> OpaquePointer {
        guard let handle = self.handle else {
            throw DatabaseError(.connectionLost, message: "the connection is closed")
        }
        return handle
    }

    /// Obeys the state machine's answer to an event that comes before any I/O: throws its
    /// rejection.
    func obey(_ action: PostgresConnectionStateMachine.StatementAction) throws {
        if case .fail(let error) = action {
            throw error
        }
    }

    /// Obeys the state machine's answer to entering a busy state after the I/O that started it
    /// succeeded. A rejection means the state changed since it was checked at the start of the
    /// same call (a bug): libpq is then in a state the machine does not know, so the connection
    /// is given up.
    func enterBusyState(_ action: PostgresConnectionStateMachine.StatementAction) throws {
        guard case .fail(let error) = action else { return }
        self.markBroken()
        throw error
    }

    /// Runs `body`, a wait for the server's answer to `statements` statements, under the
    /// connection's ``PostgresAnswerDeadline``: past it the socket is shut and the wait ends
    /// as a lost connection (reported as ``SpoutCore/DatabaseError/Code/notAnswering``). A wait
    /// inside another is bounded by the outer one.
    @inline(__always)
    func awaitingAnswer<Result>(statements: Int = 1, _ body: () throws -> Result) rethrows -> Result {
        try self.answerDeadline.bounding(statements: statements, body)
    }

    /// Marks the start of a statement that `cancel()` may target: one exchange with the
    /// server, counted in ``roundTrips``.
    func statementStarting() {
        self.roundTrips += 1
        self.cancelState.withLock { $0.requested = false }
    }

    /// Tells the state machine the transaction status the last result left (see
    /// ``PostgresConnectionStateMachine/resultRead(_:)``).
    func noteTransactionState() {
        self.stateMachine.resultRead(self.transactionStatus)
    }

    /// The error for a failed statement: `result`'s SQLSTATE and message, or libpq's connection
    /// message. Marks the connection broken when it is lost.
    func makeError(_ result: OpaquePointer?) -> DatabaseError {
        guard let handle = self.handle else {
            return DatabaseError(.connectionLost, message: "the connection is closed")
        }
        let sqlState = result.flatMap { PostgresErrorMapping.sqlState(of: $0) }
        var message = result.map { PostgresErrorMapping.message(PQresultErrorMessage($0)) } ?? ""
        if message.isEmpty {
            message = PostgresErrorMapping.message(PQerrorMessage(handle))
        }
        if message.isEmpty, let result {
            message = "unexpected result status \(String(cString: PQresStatus(PQresultStatus(result))))"
        }
        if self.answerDeadline.hasExpired {
            // The watchdog shut the socket: whatever libpq made of that, the server is gone.
            self.markBroken()
            return DatabaseError(
                .notAnswering, message: "the server did not answer within the statement timeout and the grace period")
        }
        let cancelRequested = self.cancelState.withLock { $0.requested }
        var code = PostgresErrorMapping.code(forSQLState: sqlState, cancelRequested: cancelRequested)
        let connectionIsBad = PQstatus(handle) == CONNECTION_BAD
        if code == .connectionLost && sqlState == "08P01" && !connectionIsBad {
            // A protocol violation reported by a live server (e.g. a wrong parameter count):
            // the statement failed, the connection is fine.
            code = .other
        }
        if connectionIsBad || code == .connectionLost {
            self.markBroken()
            code = .connectionLost
        } else if PostgresErrorMapping.meansStandby(
            sqlState: sqlState, inHotStandby: PQparameterStatus(handle, "in_hot_standby").map { String(cString: $0) },
            wantsWrites: self.stateMachine.wantsWrites(self.transactionStatus))
        {
            // The server became (or always was) a standby: another connection of the pool
            // would find the same, so the pool retires them all and opens the next one where
            // the URL leads now (the primary, with `target_session_attrs=read-write`).
            self.markBroken()
            code = .serverReadOnly
        }
        let violated = result.flatMap { PostgresErrorMapping.violated(in: $0, sqlState: sqlState) }
        return DatabaseError(code, message: message, sqlState: sqlState, violated: violated)
    }

    /// Gives the connection up after a protocol state it cannot recover from; the pool then
    /// discards it.
    func markBroken() {
        self.stateMachine.connectionFailed()
    }

    // MARK: Statements

    /// The name of the prepared statement for `text` with the types of `parameters`,
    /// preparing it on first use; nil without session state (the statement is then sent
    /// unnamed, see ``send(_:prepared:_:handle:)``).
    func preparedStatementName(for text: String, _ parameters: PostgresTextParameters, handle: OpaquePointer) throws -> String? {
        guard self.keepsSessionState else { return nil }
        let key = PostgresStatementNames.key(text, parameters)
        if let name = self.statementNames.prepared[key] {
            return name
        }
        let name = self.statementNames.reservePreparedName()
        let result = self.awaitingAnswer { parameters.withUnsafeTypes { count, types in PQprepare(handle, name, text, count, types) } }
        defer { PQclear(result) }
        guard let result, PQresultStatus(result) == PGRES_COMMAND_OK else {
            let error = self.makeError(result)
            self.noteTransactionState()
            throw error
        }
        self.statementNames.prepared(key, as: name)
        return name
    }

    /// Sends what libpq holds of a non-blocking connection's output, as far as the socket takes
    /// it: whether some is left to send, or nil when the connection failed.
    func flushOutput(_ handle: OpaquePointer) -> Bool? {
        switch PQflush(handle) {
        case 0: return false
        case 1: return true
        default: return nil
        }
    }

    /// How a statement goes into a pipeline (``pipelinedName(for:_:pending:handle:)``).
    enum PipelinedName {
        /// Unnamed, with its text (without session state).
        case unnamed
        /// As the statement prepared (or being prepared) under this name.
        case prepared(String)
        /// As the statement whose prepare was just queued under `name`, for `key`
        /// (``PostgresStatementNames/key(_:_:)``): its result comes before the statement's.
        case preparing(name: String, key: String)
        /// The prepare could not be sent.
        case sendFailed
    }

    /// The name to send `text` under in a pipeline, queueing its prepare (`PQsendPrepare`)
    /// when neither the connection nor `pending` (the prepares queued and not yet answered, by
    /// key) has it; the caller records it prepared once the prepare's result arrives.
    func pipelinedName(
        for text: String, _ parameters: PostgresTextParameters, pending: inout [String: String], handle: OpaquePointer
    ) -> PipelinedName {
        guard self.keepsSessionState else { return .unnamed }
        let key = PostgresStatementNames.key(text, parameters)
        if let prepared = self.statementNames.prepared[key] ?? pending[key] { return .prepared(prepared) }
        let name = self.statementNames.reservePreparedName()
        pending[key] = name
        let sent = parameters.withUnsafeTypes { count, types in PQsendPrepare(handle, name, text, count, types) }
        return sent == 1 ? .preparing(name: name, key: key) : .sendFailed
    }

    /// Sends `text` (without waiting for its result): as the prepared statement `name`, or
    /// unnamed with its text when `name` is nil. Returns libpq's 1 on success.
    /// On a blocking connection libpq writes the whole statement before returning, and waits
    /// while the server reads no more (a large upload to a server that stopped): that wait is
    /// under the answer deadline too.
    func send(_ text: String, prepared name: String?, _ parameters: PostgresTextParameters, handle: OpaquePointer) -> Int32 {
        self.awaitingAnswer {
            parameters.withUnsafeCValues { count, values, types in
                if let name {
                    PQsendQueryPrepared(handle, name, count, values, nil, nil, 0)
                } else {
                    PQsendQueryParams(handle, text, count, types, values, nil, nil, 0)
                }
            }
        }
    }

    @discardableResult
    public func execute(_ sql: ParsedSQL, _ parameters: [SQLValue]) throws -> Int {
        let handle = try self.idleHandle()
        let parameters = try PostgresTextParameters(parameters)
        try self.openImplicitTransactionIfNeeded()
        self.statistics.recordStatement()
        self.statementStarting()
        let name = try self.preparedStatementName(for: sql.text, parameters, handle: handle)
        guard self.send(sql.text, prepared: name, parameters, handle: handle) == 1 else {
            let error = self.makeError(nil)
            self.noteTransactionState()
            throw error
        }
        // Like PQexec*: every result is read, the last one (the statement's) kept.
        var result: OpaquePointer?
        self.awaitingAnswer {
            while let next = PQgetResult(handle) {
                PQclear(result)
                result = next
            }
        }
        defer {
            PQclear(result)
            self.noteTransactionState()
        }
        try self.checkCommandResult(result, handle: handle)
        return Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    public func executeScript(_ sql: String) throws {
        let handle = try self.idleHandle()
        guard !sql.utf8.contains(0) else {
            throw DatabaseError(.invalidSQL, message: "the script contains a NUL character")
        }
        self.statistics.recordStatement()
        self.statementStarting()
        // A script's statements are many, and a load's may run long: no answer deadline.
        let result = PQexec(handle, sql)
        defer {
            PQclear(result)
            self.noteTransactionState()
        }
        try self.checkCommandResult(result, handle: handle)
    }

    /// Runs a statement without parameters and rows (BEGIN, SET, ...), not counted in the
    /// statistics. Returns its command tag (`COMMIT`, `ROLLBACK`, ...).
    @discardableResult
    func runCommand(_ sql: String) throws -> String {
        let handle = try self.idleHandle()
        self.statementStarting()
        let statements = sql.utf8.count(where: { $0 == UInt8(ascii: ";") }) + 1
        let result = self.awaitingAnswer(statements: statements) { PQexec(handle, sql) }
        defer {
            PQclear(result)
            self.noteTransactionState()
        }
        try self.checkCommandResult(result, handle: handle)
        return String(cString: PQcmdStatus(result))
    }

    /// Throws unless `result` is a success. A `COPY` the caller started by hand is ended first,
    /// so the connection stays usable.
    private func checkCommandResult(_ result: OpaquePointer?, handle: OpaquePointer) throws {
        let status = result.map { PQresultStatus($0) } ?? PGRES_FATAL_ERROR
        switch status {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return
        case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
            self.drainResults(handle, pending: status)
            throw DatabaseError(.unsupported, message: "COPY through execute is not supported; use bulkInsert(into:columns:)")
        default:
            throw self.makeError(result)
        }
    }

    /// Reads and discards every pending result until libpq has none, ending a COPY on the way.
    /// - Parameter pending: the status of a result already read, when it was a COPY state.
    func drainResults(_ handle: OpaquePointer, pending: ExecStatusType? = nil) {
        self.awaitingAnswer {
            var status = pending
            while true {
                switch status {
                case PGRES_COPY_IN:
                    guard PQputCopyEnd(handle, "spout: COPY abandoned") == 1 else {
                        self.markBroken()
                        return
                    }
                case PGRES_COPY_OUT:
                    var buffer: UnsafeMutablePointer<CChar>?
                    while PQgetCopyData(handle, &buffer, 0) > 0 {
                        PQfreemem(buffer)
                        buffer = nil
                    }
                case PGRES_COPY_BOTH:
                    self.markBroken()
                    return
                default:
                    break
                }
                guard let result = PQgetResult(handle) else { break }
                status = PQresultStatus(result)
                PQclear(result)
            }
            if PQstatus(handle) == CONNECTION_BAD {
                self.markBroken()
            }
        }
    }

    /// Discards the results libpq can deliver without waiting; true when none are left.
    private func drainWithoutBlocking(_ handle: OpaquePointer) -> Bool {
        guard PQconsumeInput(handle) == 1 else { return false }
        while PQisBusy(handle) == 0 {
            guard let result = PQgetResult(handle) else { return true }
            let status = PQresultStatus(result)
            PQclear(result)
            if status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH {
                return false
            }
        }
        return false
    }

    /// Obeys the state machine's clean-up after it left a busy state, then tells it the
    /// transaction status that leaves.
    func cleanUp(_ action: PostgresConnectionStateMachine.CleanupAction) {
        guard let handle = self.handle else { return }
        switch action {
        case .nothing:
            return
        case .drain(let cancelIfRunning):
            if cancelIfRunning && !self.drainWithoutBlocking(handle) {
                self.cancelForCleanup()
            }
            self.drainResults(handle)
        case .failCopy:
            self.drainResults(handle, pending: PGRES_COPY_IN)
        }
        self.noteTransactionState()
    }

    // MARK: Transactions and settings

    /// `BEGIN READ ONLY` or `BEGIN READ WRITE`: explicit either way, since the session's
    /// default may be read-only (``setReadOnly(_:)``). Without session state the settings
    /// follow in the same round trip (`SET LOCAL`), after committing an implicit transaction.
    public func begin(readOnly: Bool) throws {
        do {
            try self.runCommand(self.beginStatements(readOnly: readOnly).joined(separator: "; "))
        } catch {
            throw self.standbyRefusal(of: error, readOnly: readOnly)
        }
        self.stateMachine.transactionBegun(implicit: false)
    }

    /// `error`, thrown by a `BEGIN`, as ``SpoutCore/DatabaseError/Code/serverReadOnly`` when it
    /// was a `BEGIN READ WRITE` the server refused for being a standby (the connection is then
    /// given up, like one that found out on a write).
    func standbyRefusal(of error: any Error, readOnly: Bool) -> any Error {
        guard !readOnly, var refusal = error as? DatabaseError, PostgresErrorMapping.beginReadWriteMeansStandby(sqlState: refusal.sqlState)
        else { return error }
        self.markBroken()
        refusal.code = .serverReadOnly
        return refusal
    }

    /// What ``begin(readOnly:)`` sends, one statement each, for libpq's current status;
    /// `snapshot`: at `REPEATABLE READ` (``beginSnapshot(session:)``).
    func beginStatements(readOnly: Bool, snapshot: Bool = false) -> [String] {
        self.stateMachine.transactionModeRequested(readOnly: readOnly)
        switch self.stateMachine.beginRequested(readOnly: readOnly, status: self.transactionStatus) {
        case .begin(let readOnly):
            return [Self.begin(readOnly: readOnly, snapshot: snapshot)]
        case .beginWithSettings(let readOnly, let commitFirst, let statementTimeout):
            return (commitFirst ? ["COMMIT"] : [])
                + [Self.begin(readOnly: readOnly, snapshot: snapshot), "SET LOCAL statement_timeout = \(statementTimeout)"]
                + Self.transactionSettings
        }
    }

    private static func begin(readOnly: Bool, snapshot: Bool) -> String {
        (snapshot ? "BEGIN ISOLATION LEVEL REPEATABLE READ, " : "BEGIN ") + (readOnly ? "READ ONLY" : "READ WRITE")
    }

    /// Without session state, outside a transaction: opens one with the lease's read-only
    /// setting and timeout, for the statement about to run (see the type's contract).
    func openImplicitTransactionIfNeeded() throws {
        guard self.stateMachine.needsImplicitTransaction(self.transactionStatus) else { return }
        try self.begin(readOnly: self.stateMachine.sessionReadOnly ?? false)
        self.stateMachine.transactionBegun(implicit: true)
    }

    /// Commits. Throws ``SpoutCore/DatabaseError/Code/other`` when PostgreSQL rolled the
    /// transaction back instead because a statement in it had failed.
    public func commit() throws {
        let tag = try self.runCommand("COMMIT")
        if tag == "ROLLBACK" {
            throw DatabaseError(.other, message: "the transaction was rolled back: a statement in it had failed")
        }
    }

    /// `statement` and `COMMIT` in one pipeline, one round trip. When `statement` fails, the
    /// server skips the `COMMIT` and the transaction stays open, failed, for the caller's
    /// rollback; a `COMMIT` that rolls back (a statement before failed) throws.
    public func commit(after statement: BoundStatement) throws {
        guard self.transactionStatus != .failed else {
            throw DatabaseError(.other, message: "the transaction was rolled back: a statement in it had failed")
        }
        let commit = BoundStatement(try ParsedSQL.cached("COMMIT", dialect: .postgres), [])
        try self.runSettings([statement, commit])
        self.noteTransactionState()
        if self.isInTransaction {
            throw DatabaseError(.other, message: "the transaction did not commit")
        }
    }

    public func rollback() throws {
        try self.runCommand("ROLLBACK")
    }

    /// The statement timeout the connection's statements run under, in milliseconds (0: none,
    /// and when not known).
    var statementTimeoutInEffect: Int { self.stateMachine.statementTimeout ?? 0 }

    /// Sends `SET statement_timeout` only when the value differs from the one in effect.
    /// Without session state only remembers it for the next transaction (or sets it `LOCAL`
    /// in the open one).
    public func setStatementTimeout(milliseconds: Int?) throws {
        let value = max(0, milliseconds ?? 0)
        self.answerDeadline.setStatementTimeout(milliseconds: value)
        switch self.stateMachine.statementTimeoutRequested(milliseconds, status: self.transactionStatus) {
        case .nothing:
            return
        case .set:
            try self.runCommand("SET statement_timeout = \(value)")
        case .setLocal:
            try self.runCommand("SET LOCAL statement_timeout = \(value)")
        }
        self.stateMachine.statementTimeoutSet(value)
    }

    /// Sets `default_transaction_read_only` only when it differs from the value in effect.
    /// Without session state only remembers it: transactions are opened with it.
    public func setReadOnly(_ readOnly: Bool) throws {
        switch self.stateMachine.readOnlyRequested(readOnly) {
        case .nothing:
            return
        case .set, .setLocal:
            try self.runCommand("SET default_transaction_read_only = \(readOnly ? "on" : "off")")
        }
        self.stateMachine.readOnlySet(readOnly)
    }

    // MARK: Cancel, reset, close

    /// Sends a cancel request for the running statement. Blocks the calling thread while
    /// libpq connects to the server and sends it, but holds no lock meanwhile: the reactor
    /// thread and this connection's holder are never held up by a slow or unreachable server.
    public func cancel() {
        let cancel = self.cancelState.withLock { state -> PostgresCancelHandle? in
            guard let cancel = state.handle else { return nil }
            state.requested = true
            return cancel
        }
        cancel?.send()
    }

    /// Asks the server to cancel the running statement without reporting it as a caller's
    /// cancel (used to stop a single-row stream that is being closed).
    func cancelForCleanup() {
        self.cancelState.withLock { $0.handle }?.send()
    }

    public func reset() -> Bool {
        guard let handle = self.handle else { return false }
        switch self.stateMachine.resetRequested() {
        case .refuse:
            // Broken, closed, or (event-driven) only the reactor may touch it until the run
            // completes: never reused.
            return false
        case .closeStream:
            self.activeStream?.close()
            self.endStream(cancelling: true)
        case .abandonCopy:
            self.activeCopy?.abandon()
            self.abandonCopy()
        case .abandonFetch:
            self.abandonFetch(keepingTransaction: false)
        case .endTransaction:
            break
        }
        guard !self.stateMachine.isBroken, PQstatus(handle) == CONNECTION_OK else {
            self.markBroken()
            return false
        }
        var succeeded = true
        switch self.stateMachine.transactionEndForReset(self.transactionStatus) {
        case .commit:
            // The statements of a lease without session state ran in it as if in autocommit.
            do { try self.commit() } catch { succeeded = false }
        case .rollback:
            do { try self.rollback() } catch { succeeded = false }
        case .nothing:
            break
        }
        self.cancelState.withLock { $0.requested = false }
        return succeeded && !self.stateMachine.isBroken
    }

    public func close() {
        guard let handle = self.handle else { return }
        self.handle = nil
        self.stateMachine.closed()
        // Before PQfinish closes the socket, whose number may then be reused.
        self.answerDeadline.retire()
        // The cancel handle is freed when its last user (a cancel being sent) lets it go.
        self.cancelState.withLock { $0.handle = nil }
        PQfinish(handle)
    }
}

/// libpq's `PGcancel`, freed when the last reference goes: a cancel request being sent on one
/// thread keeps it alive while the connection is closed on another, and no lock is held while
/// it is sent (`PQcancel` opens a connection to the server, which may be slow or unreachable).
// @unchecked Sendable: the pointer never changes; libpq documents that `PQcancel` only reads
// the `PGcancel` and may be called from a thread other than the connection's (even a signal
// handler); it is freed only in deinit, when nothing else can reach it.
final class PostgresCancelHandle: @unchecked Sendable {
    private let cancel: OpaquePointer

    init(_ cancel: OpaquePointer) {
        self.cancel = cancel
    }

    deinit {
        PQfreeCancel(self.cancel)
    }

    /// Sends the cancel request (blocking until the server has it, or libpq gives up).
    func send() {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
            _ = PQcancel(self.cancel, buffer.baseAddress, Int32(buffer.count))
        }
    }
}
