/// Options for ``DatabaseConnection/query(_:_:options:)``.
public struct QueryOptions: Sendable, Hashable {
    /// Whether the result is read in batches, with pauses between them that belong to the
    /// caller (a slow client's backpressure) and other statements allowed in between (attached
    /// child queries between windows of parent rows).
    ///
    /// PostgreSQL then reads through a server-side cursor (`DECLARE` + `FETCH batchSize`), which
    /// requires an open transaction (``DatabaseConnection/begin(readOnly:)``); each `FETCH` is a
    /// statement of its own under the statement timeout. Without it, PostgreSQL reads in
    /// single-row mode and the connection is busy until the cursor ends or is closed. SQLite's
    /// statements interleave freely; with the flag its statement timeout counts only the time
    /// spent stepping, renewed after every `batchSize` rows, instead of running from the query.
    public var interleaved: Bool
    /// Rows per batch: per `FETCH` of a PostgreSQL cursor, per timeout renewal on SQLite.
    public var batchSize: Int

    /// With `interleaved` on PostgreSQL: send each next `FETCH` as soon as a batch arrives, so
    /// the server produces it while the caller handles the current one. No other statement
    /// may run on the connection until the cursor is closed. (A batch waits for the caller in
    /// the socket buffers; one bigger than those keeps its `FETCH`, and so the statement
    /// timeout, running until the caller reads on.) SQLite ignores it.
    public var prefetch: Bool

    /// Plan the statement for the values bound, every time, instead of reusing a plan made for
    /// any values. For statements whose best plan depends on the values, such as a page's
    /// `WHERE last_name = $1 ORDER BY emp_no LIMIT $2`: a common name is best found by walking
    /// the `ORDER BY` index, a rare one through the index on `last_name`. PostgreSQL then sends
    /// the statement unnamed (planned at each execution, as server-side cursors always are)
    /// rather than as a prepared statement, which may switch to a generic plan after five
    /// executions. SQLite ignores it (its plans never depend on the values bound).
    public var planForValues: Bool

    public init(interleaved: Bool = false, batchSize: Int = 500, prefetch: Bool = false, planForValues: Bool = false) {
        self.interleaved = interleaved
        self.batchSize = batchSize
        self.prefetch = prefetch
        self.planForValues = planForValues
    }
}

/// A statement with its parameters bound (``ParsedSQL/bind(_:)``).
public struct BoundStatement: Sendable {
    public var sql: ParsedSQL
    public var parameters: [SQLValue]

    public init(_ sql: ParsedSQL, _ parameters: [SQLValue]) {
        self.sql = sql
        self.parameters = parameters
    }
}

/// Every row of one statement, read at once (``DatabaseConnection/queryAll(_:)``).
public struct QueryResult: Sendable {
    public var columns: [Column]
    public var rows: [[SQLValue]]

    public init(columns: [Column], rows: [[SQLValue]]) {
        self.columns = columns
        self.rows = rows
    }
}

/// A forward-only cursor over the rows of one statement.
///
/// Contract:
/// - ``columns`` is known as soon as the cursor is returned, before the first ``next()``.
/// - ``next()`` advances to the next row and returns `false` at the end; once it has returned
///   `false` (or thrown), every later call returns `false`.
/// - ``value(at:)`` reads a column of the current row; call it only after ``next()`` returned
///   `true`. Values are owned: they stay valid after the cursor moves on. ``isNull(at:)``
///   answers whether the column is SQL NULL (``value(at:)`` is then `.null`) without making
///   the value; not on a row, it answers `true`.
/// - ``close()`` releases the statement and is idempotent. A cursor left open keeps its
///   connection busy; the pool closes it when the connection is returned.
/// - A cursor is confined to the thread that uses its connection. Do not store or escape it.
public protocol RowCursor: AnyObject {
    var columns: [Column] { get }
    func next() throws -> Bool
    func value(at index: Int) -> SQLValue
    func isNull(at index: Int) -> Bool
    func close()
}

extension RowCursor {
    /// Whether ``value(at:)`` is `.null`, by making the value; a driver's cursor asks its row
    /// whether the column is SQL NULL instead.
    public func isNull(at index: Int) -> Bool {
        if case .null = self.value(at: index) { return true }
        return false
    }
}

/// Streams rows into a table as fast as the database allows (PostgreSQL `COPY FROM STDIN`,
/// SQLite one prepared `INSERT` reused). It runs inside the caller's transaction, if any.
public protocol BulkInserter: AnyObject {
    /// Appends one row; `row.count` equals the number of columns given when it was created.
    func append(_ row: [SQLValue]) throws
    /// Ends the load and returns the number of rows written.
    func finish() throws -> Int
}

/// One connection to a database.
///
/// A connection is confined to one thread at a time: the pool hands it to a single lease, and
/// the holder runs every call below on one thread (off any event loop: the calls block).
/// The only exception is ``cancel()``, which any thread may call at any time.
public protocol DatabaseConnection: AnyObject, Sendable {
    var dialect: SQLDialect { get }

    /// How attached child queries run on this connection (the driver's strategy); by default
    /// once per parent row (``PerParentChildQueries``).
    var childQueries: any ChildQueryStrategy { get }

    /// Runs a statement and returns a cursor over its rows.
    ///
    /// `parameters[i]` binds placeholder `i + 1` of `sql.text` (see ``ParsedSQL``). Prepared
    /// statements are cached per connection, keyed by `sql.text`.
    func query(_ sql: ParsedSQL, _ parameters: [SQLValue], options: QueryOptions) throws -> any RowCursor

    /// The database's plan for the statement ``query(_:_:options:)`` would run with the same
    /// arguments, one line per plan line, without running it. PostgreSQL: `EXPLAIN` of the
    /// `DECLARE ... CURSOR` an interleaved query declares (in the caller's transaction, as the
    /// cursor needs), of the prepared statement's `EXECUTE` (the plan its cache would use
    /// now, generic or custom), or of the unnamed statement with the values bound
    /// (``QueryOptions/planForValues``). SQLite: `EXPLAIN QUERY PLAN`, indented by depth.
    func explain(_ sql: ParsedSQL, _ parameters: [SQLValue], options: QueryOptions) throws -> [String]

    /// Runs `statements` in order and returns all the rows of each (buffered: for small
    /// results, such as the children of one parent row). PostgreSQL sends them together in
    /// one round trip (libpq pipeline mode); the default runs them one by one through
    /// ``query(_:_:options:)``. When one fails, the error is thrown and the statements after
    /// it do not run (on PostgreSQL they are skipped by the server).
    func queryAll(_ statements: [BoundStatement]) throws -> [QueryResult]

    /// Runs a statement that returns no rows; returns the number of rows it changed.
    @discardableResult
    func execute(_ sql: ParsedSQL, _ parameters: [SQLValue]) throws -> Int

    /// Runs one or more statements without parameters (schema scripts).
    func executeScript(_ sql: String) throws

    /// Starts a transaction. `readOnly` makes writes fail (PostgreSQL `BEGIN READ ONLY`).
    func begin(readOnly: Bool) throws
    func commit() throws
    /// Runs `statement` as the open transaction's last and commits: PostgreSQL sends both in
    /// one round trip; the default runs them one after the other. When `statement` fails,
    /// nothing is committed and the transaction is left for the caller to roll back.
    func commit(after statement: BoundStatement) throws
    func rollback() throws
    var isInTransaction: Bool { get }

    /// Makes the statements run outside an explicit transaction read-only (`true`) or
    /// writable; explicit transactions say what they are (``begin(readOnly:)``). The pool
    /// calls it when it hands the connection to a lease, so a read-only lease needs no
    /// transaction to be read-only. Costs a round trip only when the setting changes.
    /// Throws ``DatabaseError/Code/readOnly`` for `false` on a connection opened read-only.
    func setReadOnly(_ readOnly: Bool) throws

    /// Limits how long each following statement may run; `nil` removes the limit. A statement
    /// that runs longer fails with ``DatabaseError/Code/statementTimeout``.
    func setStatementTimeout(milliseconds: Int?) throws

    /// Cancels the statement running on this connection, if any, from any thread. The running
    /// call then throws ``DatabaseError/Code/cancelled``; the connection stays usable.
    func cancel()

    /// True once the connection is lost or unusable; the pool discards such connections.
    var isBroken: Bool { get }

    /// For an idle connection: whether the server is still there, checked without blocking
    /// and without a round trip (PostgreSQL: a server that went away has closed the socket,
    /// which reads as end of file). False also marks the connection broken. The default is
    /// `!isBroken`.
    func isAlive() -> Bool

    /// Brings the connection back to idle: closes open cursors, drains pending results, rolls
    /// back an open transaction. The statement timeout is not part of it: the pool sets its
    /// own default after every reset (a no-op when the lease kept that value), so a lease
    /// that used the default costs no round trip. Returns `false` when that fails (the pool
    /// then discards the connection).
    func reset() -> Bool

    /// Closes the connection. Idempotent.
    func close()

    /// Starts a bulk load into `table` (its `columns`, in order).
    func bulkInsert(into table: String, columns: [String]) throws -> any BulkInserter

    /// Runs `body`, whose ``QueryOptions/interleaved`` queries let other statements run between
    /// their batches, in whatever such queries need: PostgreSQL's server-side cursors live in
    /// a transaction, so a read-only one is opened when the caller has none, committed when
    /// `body` returns (after its cursors are closed) and rolled back when it throws. Default:
    /// runs `body` as it is.
    func withInterleavedQueries<T>(_ body: () throws -> T) throws -> T

    /// Runs `body` with a ``WritePipeline`` on this connection, in the caller's open
    /// transaction, with at most `window` statements in flight; `answered` gets each
    /// statement's answer, in order: its changed-row count and, with `keepsRows`, the rows it
    /// returned. Returns once every statement sent is answered. When `body` throws, the
    /// statements in flight are answered first: a failure among them (the earlier) is thrown
    /// instead of `body`'s error. Until it returns the connection takes no other statement.
    /// Default: ``SequentialWritePipeline``.
    func withWritePipeline<T>(
        window: Int, keepsRows: Bool, answered: (WriteAnswer) throws -> Void, _ body: (any WritePipeline) throws -> T
    ) throws -> T

    /// A ``SetWrite`` for many records of `statement`, in the caller's open transaction, or
    /// nil when this connection runs them as well one by one (a ``WritePipeline``) or cannot
    /// apply this statement as a set. Call it only for a statement whose rows are not kept
    /// (no `RETURNING` answer is read). Default: nil (SQLite, whose statements cost no round
    /// trip and little setting up).
    func setWrite(for statement: ParsedSQL) throws -> (any SetWrite)?

    /// Runs a statement that may return rows (`INSERT … RETURNING`) and answers the rows it
    /// changed and every row it returned (nil for a statement that returns no columns), for a
    /// ``SequentialWritePipeline`` that keeps rows. Default: ``execute(_:_:)``, keeping no rows
    /// (SQLite reads them; PostgreSQL's pipeline reads its answers itself).
    func executeReturning(_ sql: ParsedSQL, _ parameters: [SQLValue]) throws -> WriteAnswer

    /// Whether the database has a role and settings a ``RequestSession`` sets
    /// (``begin(readOnly:session:)``): PostgreSQL. When true, work with a session always runs
    /// in a transaction, which ends them. Default: false (SQLite: claims reach SQL as
    /// parameters).
    var appliesRequestSessions: Bool { get }

    /// Starts a transaction, like ``begin(readOnly:)``, and applies `session` (role and
    /// claims) in it, local to it. PostgreSQL sends both in one round trip (a pipeline), so a
    /// request with an identity waits no longer for its transaction than one without. When
    /// it throws, no transaction is left open. Called only when ``appliesRequestSessions``;
    /// the default only begins.
    func begin(readOnly: Bool, session: RequestSession) throws

    /// Starts a read-write transaction (with `session` applied as
    /// ``begin(readOnly:session:)`` does, when given) whose statements all read the snapshot
    /// its first statement takes: a write to a row another transaction changed after that
    /// fails with ``DatabaseError/Code/serializationFailure``. PostgreSQL: `REPEATABLE READ`.
    /// The default begins a read-write transaction, for a database whose write transactions
    /// run one at a time (SQLite's `BEGIN IMMEDIATE`), so nothing changes under them.
    func beginSnapshot(session: RequestSession?) throws

    /// For a connection to a streaming replica: how far its replay is behind the primary, in
    /// milliseconds (0 when it has replayed all it received); nil when the database cannot
    /// tell (the default, and SQLite's). One round trip.
    func replicationLag() throws -> Int?

    /// The server this connection reached, as `host:port` (PostgreSQL: the host and port of a
    /// multi-host URL it connected to), for `/ready`, logs and telling a failover; nil when
    /// there is no server (the default, and SQLite's). Never blocks.
    var serverAddress: String? { get }

    /// The roles among `roles` (nil: the role this connection logged in as) that row-level
    /// security does not apply to (PostgreSQL: a superuser, or `BYPASSRLS`), by name; roles
    /// the database does not know are left out. Empty for a database without row-level
    /// security (the default, and SQLite's). One round trip.
    func rolesBypassingRowSecurity(_ roles: [String?]) throws -> [String]

    /// Whether the database has a table `name` where an unquoted name in SQL finds it
    /// (PostgreSQL: on the search path, the name folded to lower case; SQLite: in the main
    /// database, without case). One round trip.
    func tableExists(_ name: String) throws -> Bool

    /// Waits until no other transaction holds `key`, then holds it until this connection's
    /// transaction ends: what serializes several instances' set-up of shared tables on one
    /// database. PostgreSQL: a transaction advisory lock (`pg_advisory_xact_lock`); SQLite:
    /// nothing, as its write transactions already exclude each other. Call it in a transaction.
    func lockUntilTransactionEnds(_ key: Int64) throws
}

extension DatabaseConnection {
    public func commit(after statement: BoundStatement) throws {
        try self.execute(statement.sql, statement.parameters)
        try self.commit()
    }
}

extension DatabaseConnection {
    public func rolesBypassingRowSecurity(_ roles: [String?]) throws -> [String] { [] }
    public func withInterleavedQueries<T>(_ body: () throws -> T) throws -> T { try body() }
    public func withWritePipeline<T>(
        window: Int, keepsRows: Bool, answered: (WriteAnswer) throws -> Void, _ body: (any WritePipeline) throws -> T
    ) throws -> T {
        try withoutActuallyEscaping(answered) { answered in
            try body(SequentialWritePipeline(connection: self, keepsRows: keepsRows, answered: answered))
        }
    }
    public func setWrite(for statement: ParsedSQL) throws -> (any SetWrite)? { nil }
    public func executeReturning(_ sql: ParsedSQL, _ parameters: [SQLValue]) throws -> WriteAnswer {
        WriteAnswer(changed: try self.execute(sql, parameters))
    }
    public var appliesRequestSessions: Bool { false }
    public func begin(readOnly: Bool, session: RequestSession) throws {
        try self.begin(readOnly: readOnly)
    }
    public func beginSnapshot(session: RequestSession?) throws {
        if let session { try self.begin(readOnly: false, session: session) } else { try self.begin(readOnly: false) }
    }
    public func replicationLag() throws -> Int? { nil }
    public var serverAddress: String? { nil }
}

extension DatabaseConnection {
    public func isAlive() -> Bool {
        !self.isBroken
    }

    /// One statement after the other, each read to its end through a cursor.
    public func queryAll(_ statements: [BoundStatement]) throws -> [QueryResult] {
        try statements.map { statement in
            let cursor = try self.query(statement.sql, statement.parameters, options: QueryOptions())
            defer { cursor.close() }
            let width = cursor.columns.count
            var rows: [[SQLValue]] = []
            while try cursor.next() {
                rows.append((0..<width).map(cursor.value(at:)))
            }
            return QueryResult(columns: cursor.columns, rows: rows)
        }
    }
}

/// Opens connections to one database.
public protocol DatabaseDriver: Sendable {
    var dialect: SQLDialect { get }

    /// Whether read-only connections differ from read-write ones (SQLite opens them with
    /// `SQLITE_OPEN_READONLY`); when false the pool shares one set of connections.
    var hasReadOnlyConnections: Bool { get }

    /// Opens a new connection. Blocks; call it off the event loop.
    /// - Parameters:
    ///   - readOnly: open a connection that can only read (when ``hasReadOnlyConnections``).
    ///   - statistics: counters the connection increments for every statement it runs.
    func connect(readOnly: Bool, statistics: QueryStatistics) throws -> any DatabaseConnection
}

extension DatabaseConnection {
    public var childQueries: any ChildQueryStrategy { PerParentChildQueries(dialect: self.dialect) }
}
