import CSQLite3
import SpoutCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A connection to an SQLite database, opened by ``SQLiteDriver``.
///
/// Contract, beyond ``DatabaseConnection``:
/// - Read-write connections use WAL journaling (`PRAGMA journal_mode=WAL`,
///   `synchronous=NORMAL`), so readers never wait for a writer. Every connection enforces
///   foreign keys and waits up to the driver's busy timeout for locks. Read-only connections
///   are opened with `SQLITE_OPEN_READONLY` and `PRAGMA query_only=1`.
/// - Prepared statements are cached by SQL text. A statement still read by an open cursor is
///   never handed out twice: the same SQL opened again gets a fresh statement, so cursors of
///   one SQL text may be open at the same time and interleave freely.
/// - ``query(_:_:options:)`` runs the statement up to its first row before it returns, so
///   errors surface there and ``RowCursor/columns`` matches the rows even after a schema change.
/// - Statement timeouts are deadlines checked every 1000 virtual-machine steps, measured from
///   the start of each ``query(_:_:options:)`` / ``execute(_:_:)`` call; stepping a cursor
///   keeps its own statement's deadline.
/// - `begin(readOnly: true)` on a read-write connection also sets `PRAGMA query_only` until
///   the transaction ends, so writes in it fail with ``DatabaseError/Code/readOnly``.
///   ``setReadOnly(_:)`` on a read-write connection sets it for the session; an explicit
///   `begin(readOnly: false)` lifts it until that transaction ends.
/// - ``QueryStatistics/recordStatement()`` is called once per ``query(_:_:options:)``,
///   ``execute(_:_:)`` and ``bulkInsert(into:columns:)``; not for transaction control,
///   settings or ``executeScript(_:)``.
///
/// `@unchecked Sendable`: all mutable state is confined to one thread at a time by the pool
/// (see ``DatabaseConnection``). The only call from other threads is ``cancel()``, which uses
/// `sqlite3_interrupt` (documented by SQLite as safe from any thread) under ``closeLock``, the
/// same lock ``close()`` takes before closing the handle, so an interrupt never reaches a
/// closed handle.
public final class SQLiteConnection: DatabaseConnection, @unchecked Sendable {
    public var dialect: SQLDialect { .sqlite }
    /// Whether the connection was opened read-only.
    public let isReadOnly: Bool

    /// The `sqlite3*`; valid until ``close()``.
    let handle: OpaquePointer
    private let statistics: QueryStatistics
    /// True once ``close()`` has started; guards `sqlite3_interrupt` against closing.
    private let closeLock = Mutex<Bool>(false)

    /// Cached statements by SQL text.
    private var cache: [String: SQLiteStatement] = [:]
    /// Statements currently leased (open cursors, running executes, bulk loads), cached or not.
    private var leased: [ObjectIdentifier: SQLiteStatement] = [:]
    private var broken = false
    /// Whether ``begin(readOnly:)`` changed `query_only` for the current transaction.
    private var queryOnlyChangedForTransaction = false
    /// The `query_only` of a read-write connection outside transactions (``setReadOnly(_:)``).
    private var sessionQueryOnly = false
    private var statementTimeout: Duration?
    /// The deadline of the statement being stepped; read by the progress handler.
    private var currentDeadline: MonotonicInstant?
    /// A budgeted step's stepping time left, until its clock starts (``step(_:within:)``).
    private var unstartedBudget: Duration?
    /// When the running budgeted step's clock started; nil while it has not.
    private var budgetClockStart: MonotonicInstant?
    /// Set by the progress handler when it stopped a statement at its deadline.
    private var deadlineExpired = false

    /// The most statements kept in the cache; beyond it, idle ones are dropped.
    static let statementCacheCapacity = 256
    /// Virtual-machine steps between two deadline checks.
    static let progressInterval: Int32 = 1000

    /// Opens and configures a connection.
    /// - Parameters:
    ///   - filename: a path, or a `file:` URI when `flags` include `SQLITE_OPEN_URI`.
    ///   - flags: `sqlite3_open_v2` flags without the read/write mode.
    /// - Throws: ``DatabaseError/Code/connectionFailed`` when the database cannot be opened
    ///   or configured (a missing file for a read-only connection, a file that is not a database,
    ///   a directory this process cannot write); its message names the file and the reason
    ///   (see ``openFailureMessage(filename:isURI:readOnly:code:reason:systemErrno:)``).
    init(
        filename: String, flags: Int32, readOnly: Bool, busyTimeoutMilliseconds: Int, statistics: QueryStatistics
    ) throws {
        let mode = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        let isURI = flags & SQLITE_OPEN_URI != 0
        var opened: OpaquePointer?
        let result = sqlite3_open_v2(filename, &opened, mode | flags | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, nil)
        guard result == SQLITE_OK, let handle = opened else {
            let message = Self.openFailureMessage(
                filename: filename, isURI: isURI, readOnly: readOnly, code: result,
                reason: SQLiteErrorMapping.message(opened, code: result),
                systemErrno: opened.map { sqlite3_system_errno($0) } ?? 0)
            sqlite3_close_v2(opened)
            throw DatabaseError(.connectionFailed, message: message, sqlState: String(result))
        }
        do {
            try Self.configure(handle, readOnly: readOnly, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        } catch var error as DatabaseError {
            // The WAL pragma is the first write: a read-only file or directory shows up here.
            error.message = Self.openFailureMessage(
                filename: filename, isURI: isURI, readOnly: readOnly,
                code: sqlite3_extended_errcode(handle), reason: error.message,
                systemErrno: sqlite3_system_errno(handle))
            sqlite3_close_v2(handle)
            throw error
        } catch {
            sqlite3_close_v2(handle)
            throw error
        }
        self.handle = handle
        self.isReadOnly = readOnly
        self.statistics = statistics
    }

    deinit {
        self.close()
    }

    /// The message of a failure to open or configure `filename`, for the operator (it goes to
    /// the log or standard error, never to an HTTP client): the database as its URL, SQLite's
    /// reason, then the system error behind it, or, when permissions refuse a read-write
    /// connection, which file or directory this process may not write; for example
    /// `cannot open sqlite:/app/data/spout.sqlite: unable to open database file: permission
    /// denied (the directory /app/data is not writable by uid 10001)`.
    static func openFailureMessage(
        filename: String, isURI: Bool, readOnly: Bool, code: Int32, reason: String, systemErrno: Int32
    ) -> String {
        let text = "cannot open \(isURI ? filename : "sqlite:" + filename): \(reason)"
        let permissionCodes = [SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_PERM, SQLITE_IOERR]
        if !isURI, !readOnly, permissionCodes.contains(code & 0xff), let problem = Self.permissionProblem(filename) {
            // The errno is not the cause here: after EACCES, SQLite retries read-only, and that
            // attempt's ENOENT is what it keeps.
            return text + ": permission denied (\(problem))"
        }
        guard systemErrno != 0, let description = strerror(systemErrno) else { return text }
        let systemText = String(cString: description)
        return text + ": " + systemText.prefix(1).lowercased() + systemText.dropFirst()
    }

    /// What permissions (or a read-only file system) keep this process from doing with the
    /// database file `path` in read-write mode, or nil: reading and writing the file, or
    /// creating files in its directory (the file itself, and in WAL mode its -wal and -shm).
    static func permissionProblem(_ path: String) -> String? {
        func refused(_ path: String, _ mode: Int32) -> Bool {
            access(path, mode) != 0 && (errno == EACCES || errno == EROFS)
        }
        if refused(path, R_OK | W_OK) {
            return "the file is not readable and writable by uid \(geteuid())"
        }
        let directory = Self.directory(of: path)
        var information = stat()
        let isDirectory = stat(directory, &information) == 0 && information.st_mode & S_IFMT == S_IFDIR
        if isDirectory && refused(directory, W_OK | X_OK) {
            return "the directory \(directory) is not writable by uid \(geteuid())"
        }
        return nil
    }

    /// The directory part of a path: `.` for a bare file name, `/` for a file at the root.
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    private static func configure(_ handle: OpaquePointer, readOnly: Bool, busyTimeoutMilliseconds: Int) throws {
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, Int32(clamping: busyTimeoutMilliseconds))
        var pragmas = ["PRAGMA foreign_keys=ON"]
        if readOnly {
            pragmas.append("PRAGMA query_only=1")
        } else {
            pragmas.append("PRAGMA journal_mode=WAL")
            pragmas.append("PRAGMA synchronous=NORMAL")
        }
        for pragma in pragmas {
            var result = sqlite3_exec(handle, pragma, nil, nil, nil)
            // Switching a new file to WAL takes its exclusive lock, and SQLite answers BUSY
            // there without its busy handler while another connection opens it too: wait as
            // the busy timeout would.
            let waitUntil = ContinuousClock.now + .milliseconds(busyTimeoutMilliseconds)
            while result & 0xFF == SQLITE_BUSY && ContinuousClock.now < waitUntil {
                usleep(1_000)
                result = sqlite3_exec(handle, pragma, nil, nil, nil)
            }
            guard result == SQLITE_OK else {
                let message = SQLiteErrorMapping.message(handle, code: result)
                throw DatabaseError(
                    .connectionFailed, message: "cannot configure SQLite connection (\(pragma)): \(message)",
                    sqlState: String(sqlite3_extended_errcode(handle)))
            }
        }
    }

    // MARK: Statements

    public func query(_ sql: ParsedSQL, _ parameters: [SQLValue], options: QueryOptions) throws -> any RowCursor {
        let deadline = try self.startStatement()
        let statement = try self.leaseStatement(sql.text)
        let lease = try self.bind(parameters, to: statement)
        self.statistics.recordStatement()
        guard let handle = statement.handle else { throw self.closedError() }
        // The first step runs here: it reports errors at once, and it recompiles a statement
        // whose schema changed, so the columns below are those of the rows that follow.
        let first = self.step(handle, deadline: deadline)
        guard first == SQLITE_ROW || first == SQLITE_DONE else {
            let error = self.error(first, phase: .run)
            self.endLease(of: statement, lease: lease)
            throw error
        }
        let resultColumns = statement.columns()
        // A streamed result (read in batches, others may interleave) counts only its stepping
        // time against the timeout, as a PostgreSQL cursor counts only its FETCHes.
        var budget: SQLiteCursor.StepBudget?
        if options.interleaved, let timeout = self.statementTimeout, let deadline {
            budget = SQLiteCursor.StepBudget(
                timeout: timeout, batchRows: options.batchSize, spent: timeout - (deadline - MonotonicInstant.now))
        }
        return SQLiteCursor(
            connection: self, statement: statement, lease: lease, deadline: deadline, budget: budget,
            resultColumns: resultColumns, firstStepFoundRow: first == SQLITE_ROW)
    }

    @discardableResult
    public func execute(_ sql: ParsedSQL, _ parameters: [SQLValue]) throws -> Int {
        let deadline = try self.startStatement()
        let statement = try self.leaseStatement(sql.text)
        let lease = try self.bind(parameters, to: statement)
        defer { self.endLease(of: statement, lease: lease) }
        self.statistics.recordStatement()
        guard let handle = statement.handle else { throw self.closedError() }
        let changesBefore = sqlite3_total_changes64(self.handle)
        while true {
            let result = self.step(handle, deadline: deadline)
            if result == SQLITE_ROW { continue }
            if result == SQLITE_DONE { break }
            throw self.error(result, phase: .run)
        }
        return self.rowsChanged(since: changesBefore)
    }

    /// The rows the statement just stepped to its end changed (an `INSERT`, `UPDATE` or
    /// `DELETE`'s own, not a trigger's), given `sqlite3_total_changes64` before it ran.
    /// `sqlite3_changes` keeps the count of the last such statement: one that changed nothing
    /// (DDL, a `SELECT`) must not report an earlier statement's count.
    func rowsChanged(since totalBefore: Int64) -> Int {
        guard sqlite3_total_changes64(self.handle) != totalBefore else { return 0 }
        return Int(sqlite3_changes64(self.handle))
    }

    public func executeScript(_ sql: String) throws {
        self.currentDeadline = try self.startStatement()
        self.deadlineExpired = false
        var errorText: UnsafeMutablePointer<CChar>?
        let result = sqlite3_exec(self.handle, sql, nil, nil, &errorText)
        let message = errorText.map { String(cString: $0) }
        sqlite3_free(errorText)
        guard result == SQLITE_OK else {
            throw self.error(result, phase: .prepare, message: message)
        }
    }

    public func bulkInsert(into table: String, columns: [String]) throws -> any BulkInserter {
        let deadline = try self.startStatement()
        guard !columns.isEmpty else {
            throw DatabaseError(.invalidValue, message: "bulk insert into \(table) needs at least one column")
        }
        let columnList = columns.map(Self.quoteIdentifier).joined(separator: ", ")
        let placeholders = (1...columns.count).map { "?\($0)" }.joined(separator: ", ")
        let sql = "INSERT INTO \(Self.quoteIdentifier(table)) (\(columnList)) VALUES (\(placeholders))"
        let statement = SQLiteStatement(handle: try self.prepare(sql), sql: sql, isCached: false)
        let lease = self.startLease(of: statement)
        self.statistics.recordStatement()
        return SQLiteBulkInserter(
            connection: self, statement: statement, lease: lease, columnCount: columns.count, deadline: deadline)
    }

    /// `name` as an SQL identifier: in double quotes, embedded quotes doubled.
    static func quoteIdentifier(_ name: String) -> String {
        "\"" + name.replacing("\"", with: "\"\"") + "\""
    }

    // MARK: Transactions

    public func begin(readOnly: Bool) throws {
        try self.checkOpen()
        // The setting changes first: under `query_only` even `BEGIN IMMEDIATE` is refused.
        let changesQueryOnly = !self.isReadOnly && readOnly != self.sessionQueryOnly && !self.isInTransaction
        if changesQueryOnly {
            try self.control(readOnly ? "PRAGMA query_only=1" : "PRAGMA query_only=0")
        }
        do {
            try self.control(readOnly ? "BEGIN" : "BEGIN IMMEDIATE")
        } catch {
            if changesQueryOnly { self.restoreSessionQueryOnly() }
            throw error
        }
        self.queryOnlyChangedForTransaction = changesQueryOnly
    }

    public func commit() throws {
        try self.checkOpen()
        defer { self.restoreQueryOnlyIfTransactionEnded() }
        try self.control("COMMIT")
    }

    public func rollback() throws {
        try self.checkOpen()
        defer { self.restoreQueryOnlyIfTransactionEnded() }
        try self.control("ROLLBACK")
    }

    public var isInTransaction: Bool {
        !self.isClosed && sqlite3_get_autocommit(self.handle) == 0
    }

    /// Puts the session's `query_only` back once a transaction that changed it has ended.
    private func restoreQueryOnlyIfTransactionEnded() {
        guard self.queryOnlyChangedForTransaction, !self.isClosed, sqlite3_get_autocommit(self.handle) != 0 else { return }
        self.queryOnlyChangedForTransaction = false
        self.restoreSessionQueryOnly()
    }

    /// Sets `query_only` back to the session's value; a connection where that fails is broken.
    private func restoreSessionQueryOnly() {
        if (try? self.control(self.sessionQueryOnly ? "PRAGMA query_only=1" : "PRAGMA query_only=0")) == nil {
            self.broken = true
        }
    }

    /// A read-only connection stays read-only (`false` throws); a read-write one sets
    /// `PRAGMA query_only` (in process, no I/O).
    public func setReadOnly(_ readOnly: Bool) throws {
        try self.checkOpen()
        if self.isReadOnly {
            guard readOnly else { throw DatabaseError(.readOnly, message: "the connection was opened read-only") }
            return
        }
        guard readOnly != self.sessionQueryOnly else { return }
        guard !self.isInTransaction else {
            throw DatabaseError(.unsupported, message: "setReadOnly(_:) inside a transaction")
        }
        try self.control(readOnly ? "PRAGMA query_only=1" : "PRAGMA query_only=0")
        self.sessionQueryOnly = readOnly
    }

    /// Runs a transaction-control statement or setting: no deadline, not counted. Prepared
    /// once and kept in the statement cache like any statement, so a transaction's `BEGIN`
    /// and `COMMIT` are not parsed again for every request.
    private func control(_ sql: String) throws {
        self.currentDeadline = nil
        self.deadlineExpired = false
        let statement = try self.leaseStatement(sql)
        let lease = self.startLease(of: statement)
        defer { self.endLease(of: statement, lease: lease) }
        guard let handle = statement.handle else { throw self.closedError() }
        let result = sqlite3_step(handle)
        guard result == SQLITE_DONE || result == SQLITE_ROW else { throw self.error(result, phase: .run) }
    }

    // MARK: Timeouts and cancellation

    /// A limit of `0` means no limit, as in PostgreSQL; a negative limit is an invalid value.
    public func setStatementTimeout(milliseconds: Int?) throws {
        try self.checkOpen()
        guard let milliseconds, milliseconds != 0 else {
            self.statementTimeout = nil
            sqlite3_progress_handler(self.handle, 0, nil, nil)
            return
        }
        guard milliseconds > 0 else {
            throw DatabaseError(.invalidValue, message: "statement timeout must not be negative: \(milliseconds) ms")
        }
        self.statementTimeout = .milliseconds(milliseconds)
        sqlite3_progress_handler(
            self.handle, Self.progressInterval,
            { context in
                guard let context else { return 0 }
                let connection = Unmanaged<SQLiteConnection>.fromOpaque(context).takeUnretainedValue()
                return connection.deadlinePassed() ? 1 : 0
            }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Called by the progress handler on the thread stepping a statement.
    private func deadlinePassed() -> Bool {
        let now = MonotonicInstant.now
        if let budget = self.unstartedBudget {
            // The first call in a budgeted step: its clock starts now.
            self.unstartedBudget = nil
            self.budgetClockStart = now
            self.currentDeadline = now + budget
        }
        guard let deadline = self.currentDeadline, now >= deadline else { return false }
        self.deadlineExpired = true
        return true
    }

    public func cancel() {
        self.closeLock.withLock { closed in
            if !closed {
                sqlite3_interrupt(self.handle)
            }
        }
    }

    // MARK: Lifecycle

    public var isBroken: Bool { self.broken || self.isClosed }

    var isClosed: Bool { self.closeLock.withLock { $0 } }

    public func reset() -> Bool {
        guard !self.isClosed else { return false }
        for statement in self.leased.values {
            statement.endLease()
            if !statement.isCached { statement.finalize() }
        }
        self.leased.removeAll()
        var succeeded = true
        if sqlite3_get_autocommit(self.handle) == 0 {
            succeeded = (try? self.control("ROLLBACK")) != nil
        }
        if self.queryOnlyChangedForTransaction {
            self.queryOnlyChangedForTransaction = false
            self.restoreSessionQueryOnly()
        }
        return succeeded && !self.broken
    }

    public func close() {
        let wasOpen = self.closeLock.withLock { closed in
            defer { closed = true }
            return !closed
        }
        guard wasOpen else { return }
        for statement in self.leased.values { statement.finalize() }
        for statement in self.cache.values { statement.finalize() }
        self.leased.removeAll()
        self.cache.removeAll()
        sqlite3_close_v2(self.handle)
    }

    // MARK: Introspection for tests

    /// The number of statements in the cache.
    var cachedStatementCount: Int { self.cache.count }

    /// The `sqlite3_stmt` cached for `sql`, if any.
    func cachedStatementHandle(for sql: String) -> OpaquePointer? { self.cache[sql]?.handle }

    // MARK: Internals shared with cursors and bulk inserters

    /// Checks the connection is open and returns the deadline of a statement starting now.
    private func startStatement() throws -> MonotonicInstant? {
        try self.checkOpen()
        return self.statementTimeout.map { MonotonicInstant.now + $0 }
    }

    private func checkOpen() throws {
        if self.isClosed { throw self.closedError() }
    }

    private func closedError() -> DatabaseError {
        DatabaseError(.connectionLost, message: "the SQLite connection is closed")
    }

    /// Steps `statement` under `deadline`.
    @inline(__always)
    func step(_ statement: OpaquePointer, deadline: MonotonicInstant?) -> Int32 {
        self.currentDeadline = deadline
        self.deadlineExpired = false
        return sqlite3_step(statement)
    }

    /// Steps `statement` with `budget` of stepping time left (a streamed cursor's
    /// ``SQLiteCursor/StepBudget``); returns the result and the stepping time to charge.
    ///
    /// The step's clock starts at the progress handler's first call in it, after
    /// ``progressInterval`` virtual-machine steps, not before: a step that ends sooner charges
    /// nothing and reads no clock (two reads per row were 6.6 % of a plain SQLite stream's
    /// CPU), and any step undercounts by at most those first instructions (microseconds), a
    /// batch by that many times its rows. A step that runs long is stopped as before.
    @inline(__always)
    func step(_ statement: OpaquePointer, within budget: Duration) -> (result: Int32, spent: Duration) {
        self.currentDeadline = nil
        self.deadlineExpired = false
        self.unstartedBudget = budget
        let result = sqlite3_step(statement)
        self.unstartedBudget = nil
        guard let start = self.budgetClockStart else { return (result, .zero) }
        self.budgetClockStart = nil
        return (result, MonotonicInstant.now - start)
    }

    /// The error for a failed call's result code; marks the connection broken when it is lost.
    func error(_ result: Int32, phase: SQLiteErrorMapping.Phase, message: String? = nil) -> DatabaseError {
        // Results are extended codes already (extended_result_codes is on); the handle's code
        // is only more precise when it describes the same failure.
        let recorded = sqlite3_extended_errcode(self.handle)
        let extended = recorded & 0xff == result & 0xff ? recorded : result
        let code = SQLiteErrorMapping.code(
            forExtendedResult: extended, phase: phase, deadlineExpired: self.deadlineExpired)
        if code == .connectionLost { self.broken = true }
        let text = message ?? SQLiteErrorMapping.message(self.handle, code: result)
        return DatabaseError(code, message: text, sqlState: String(extended), violated: SQLiteErrorMapping.violated(extended, message: text))
    }

    /// A statement for `sql` not leased by anyone: the cached one when it is idle, otherwise a
    /// fresh one (cached when the cache has none for `sql`).
    private func leaseStatement(_ sql: String) throws -> SQLiteStatement {
        if let cached = self.cache[sql], !cached.isLeased, cached.handle != nil {
            return cached
        }
        let cacheIt = self.cache[sql] == nil
        let statement = SQLiteStatement(handle: try self.prepare(sql, persistent: cacheIt), sql: sql, isCached: cacheIt)
        if cacheIt {
            if self.cache.count >= Self.statementCacheCapacity { self.evictIdleStatements() }
            self.cache[sql] = statement
        }
        return statement
    }

    /// Binds `parameters` and starts the lease; on failure the statement is left idle.
    private func bind(_ parameters: [SQLValue], to statement: SQLiteStatement) throws -> UInt64 {
        let lease = self.startLease(of: statement)
        do {
            guard let handle = statement.handle else { throw self.closedError() }
            let expected = Int(sqlite3_bind_parameter_count(handle))
            guard expected == parameters.count else {
                throw DatabaseError(
                    .invalidValue,
                    message: "the statement has \(expected) parameters but \(parameters.count) values were given")
            }
            for (offset, value) in parameters.enumerated() {
                let result = SQLiteValueBinder.bind(value, to: handle, at: Int32(offset + 1))
                guard result == SQLITE_OK else { throw self.error(result, phase: .run) }
            }
            return lease
        } catch {
            self.endLease(of: statement, lease: lease)
            throw error
        }
    }

    func startLease(of statement: SQLiteStatement) -> UInt64 {
        self.leased[ObjectIdentifier(statement)] = statement
        return statement.lease()
    }

    /// Ends lease `lease` of `statement`, if it is still current: the statement is reset for
    /// reuse (cached) or finalized.
    func endLease(of statement: SQLiteStatement, lease: UInt64) {
        guard statement.isHeld(by: lease) else { return }
        self.leased[ObjectIdentifier(statement)] = nil
        statement.endLease()
        if !statement.isCached { statement.finalize() }
    }

    private func evictIdleStatements() {
        for (sql, statement) in self.cache where !statement.isLeased {
            statement.finalize()
            self.cache[sql] = nil
        }
    }

    /// Compiles one statement.
    /// - Parameter persistent: a hint that the statement will be kept and reused.
    private func prepare(_ sql: String, persistent: Bool = false) throws -> OpaquePointer {
        self.deadlineExpired = false
        var statement: OpaquePointer?
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        let result = sqlite3_prepare_v3(self.handle, sql, -1, flags, &statement, nil)
        guard result == SQLITE_OK else {
            sqlite3_finalize(statement)
            throw self.error(result, phase: .prepare)
        }
        guard let statement else {
            throw DatabaseError(.invalidSQL, message: "the SQL text holds no statement")
        }
        return statement
    }
}
