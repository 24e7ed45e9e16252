/// A table whose changes sync reads follow: its name, and its columns whose values make a
/// synced row's key, in the order of the endpoint's key (a pet's events name the pet).
public struct TrackedTable: Sendable, Hashable {
    public var name: String
    public var keyColumns: [String]

    public init(name: String, keyColumns: [String]) {
        self.name = name
        self.keyColumns = keyColumns
    }
}

/// One change in the log: who wrote it, to which table, which key.
public struct LoggedChange: Sendable, Hashable {
    /// What wrote it, such that all the changes of one writer become visible at once: the
    /// transaction id on PostgreSQL, the change's own position on SQLite. At or after the
    /// position a read of the log started from, when it was read from there.
    public var writer: Int64
    /// The table's ``TrackedTable/logName``.
    public var table: String
    /// The key of the synced row it touched, as the log holds it (``ChangeKeyText``).
    public var key: [SQLValue]

    public init(writer: Int64, table: String, key: [SQLValue]) {
        self.writer = writer
        self.table = table
        self.key = key
    }
}

/// Where the change log stands when a sync read starts.
public struct ChangeLogPosition: Sendable, Hashable {
    /// The position the read's new cursor holds: every change a later read must see is at or
    /// after it, including those of transactions still open now.
    public var position: Int64
    /// Changes at or before this position have been pruned (0: none): a cursor at or before it
    /// cannot be continued.
    public var horizon: Int64

    public init(position: Int64, horizon: Int64) {
        self.position = position
        self.horizon = horizon
    }

    /// The row of ``ChangeLogStatements/position``: the position, and the horizon or NULL (0).
    init(row: [SQLValue]) throws {
        guard row.count == 2, case .integer(let position) = row[0] else {
            throw DatabaseError(.other, message: "the change log's position could not be read")
        }
        var horizon: Int64 = 0
        if case .integer(let value) = row[1] { horizon = value }
        self.init(position: position, horizon: horizon)
    }
}

/// One statement's look at the change log (``ChangeTracking/probeChangeLog()``): where it stands
/// and the newest change it holds. A cursor above ``newest`` has nothing to read yet.
public struct ChangeLogProbeReading: Sendable, Hashable {
    /// The log's position and horizon, as ``ChangeTracking/changeLogPosition()`` reads them.
    public var position: ChangeLogPosition
    /// The position of the newest committed change the statement saw (0: none): no change the
    /// statement saw is at or after a cursor above it. A change it did not see is at or after
    /// ``position``.
    public var newest: Int64

    public init(position: ChangeLogPosition, newest: Int64) {
        self.position = position
        self.newest = newest
    }
}

/// The statement of a sync read's delta, made by the driver around an endpoint's statement
/// (``ChangeLogStatements/delta``). It binds the statement's own parameters, the cursor's
/// position as ``SyncQuery/sinceParameter`` and the tracked tables as
/// ``SyncQuery/tablesParameter`` (bound as ``ChangeLogStatements/tablesArgument`` binds), and
/// joins the log in SQL: no key passes through the process on its way.
///
/// Its rows, one per key the tracked tables' writes touched at or after the position: the
/// statement's own columns, then one column per key column, labelled
/// ``SyncQuery/changedKeyColumn(_:)``, holding the touched key (each value in the type of the
/// statement's where the driver can say it). When the statement has no row of that key, its
/// columns are NULL: the key is one to forget. Those rows come first (so a body can list the
/// keys to forget before the rows without holding either), the others in no particular order.
/// A key touched more than once comes once, or, where ``keysRepeat`` says so, once per change
/// in adjacent rows (a driver may leave the deduplication to the reader, ``SyncDeltaCursor``,
/// when its sort is cheaper than a `DISTINCT`).
///
/// Two forms of the same rows: ``changes`` searches the statement once per changed key, so
/// its cost follows the changes, whatever the statement's size; ``scanned``, where the
/// driver has one, reads the statement once and matches its rows to the changed keys, which
/// is cheaper when the changes are many and the statement's rows not many more
/// (``SyncDeltaChoice`` chooses).
public struct SyncDeltaSQL: Sendable, Hashable {
    public var changes: String
    /// The same rows, in the same order, by reading the statement once; nil when the driver
    /// has no such form, or none for this key's types.
    public var scanned: String?
    /// Whether a key touched more than once may come in more than one (adjacent) row.
    public var keysRepeat: Bool

    public init(changes: String, scanned: String? = nil, keysRepeat: Bool) {
        self.changes = changes
        self.scanned = scanned
        self.keysRepeat = keysRepeat
    }
}

/// A database's change log: the keys of the rows that tracked tables' writes touched, in an
/// order a sync read can resume from. Each driver supplies its SQL
/// (``changeTrackingScript(_:)``, ``changeLogStatements``: PostgreSQL a trigger function and
/// transaction ids, SQLite triggers and an autoincrement); the operations are written once,
/// here, over it.
///
/// Contract:
/// - Every committed insert, update and delete of a tracked table writes the key of the row
///   before and after it (both, when an update changes the key) in the writing transaction:
///   a change is in the log exactly when its write committed.
/// - ``changeLogPosition()`` is the first statement of a sync read. A change not at or after
///   its position was committed before it ran and is seen by every later statement of the
///   read; a change at or after it is returned by ``changedKeys(since:tables:)`` for any
///   cursor at or before it. So a cursor never moves past a change that commits later, even
///   where transactions commit in another order than they write (PostgreSQL), at the price
///   of sending some rows twice.
public protocol ChangeTracking: DatabaseConnection {
    /// The statements that create the change log and each table's triggers where missing, or
    /// replace them, or bring a log made by an earlier Spout up to date; made and run in one
    /// writing transaction (with a lock of the driver's choosing, so several processes may run
    /// it at once), so what a driver reads of the database to make them stays true until they
    /// have run.
    func changeTrackingScript(_ tables: [TrackedTable]) throws -> String
    /// The names of the triggers ``changeTrackingScript(_:)`` makes for `tables`.
    func changeTrackingTriggers(_ tables: [TrackedTable]) -> [String]
    /// The driver's statements for the operations below.
    var changeLogStatements: ChangeLogStatements { get throws }
    /// The database's estimate of how many rows `sql` answers for `parameters`, planned for
    /// those values, without running it (``SyncDeltaChoice``); nil when the driver makes none.
    func estimatedRows(of sql: ParsedSQL, _ parameters: [SQLValue]) throws -> Int?
    /// A new watch of this database's commits that reads no statement (``CommitWatch``); nil
    /// when the driver has none for it. May open files and connections of its own: it blocks.
    func commitWatch() -> (any CommitWatch)?
}

/// A driver's statements for ``ChangeTracking``, each named by what it binds and returns.
public struct ChangeLogStatements: Sendable {
    /// `:table` → one row, one value: true or non-zero when the table exists.
    public var tableExists: ParsedSQL
    /// `:table` → its column names, one per row, in order.
    public var tableColumns: ParsedSQL
    /// → one row: the position, the horizon (``ChangeLogPosition``).
    public var position: ParsedSQL
    /// → one row, read by one statement: the position, the horizon and the newest change's
    /// position or NULL (``ChangeLogProbeReading``).
    public var probe: ParsedSQL
    /// `:position`, `:tables` (``tablesArgument``) → distinct keys as JSON array text.
    public var changedKeys: ParsedSQL
    /// `:position`, `:tables` (``tablesArgument``), `:limit` → one row, one integer: how many
    /// changes to those tables are at or after the position, counted up to the limit; nil
    /// when the driver's deltas have no ``SyncDeltaSQL/scanned`` form to choose.
    public var changeCount: ParsedSQL?
    /// `:position` → every change at or after it, of every table: the writer
    /// (``LoggedChange/writer``), the table's log name, the key as JSON array text.
    public var changes: ParsedSQL
    /// `:seconds` → the newest position older than that many seconds, or NULL; never at or
    /// after the position a read would start from now (``position``), so a cursor made after
    /// a pruning is never at or before its horizon.
    public var newestPrunable: ParsedSQL
    /// `:horizon` → deletes the changes at or before it.
    public var prune: ParsedSQL
    /// `:horizon` → moves the horizon to it (never back).
    public var advanceHorizon: ParsedSQL
    /// `:names` (bound as ``tablesArgument`` binds) → one row, one integer: how many of those
    /// triggers exist, 0 when the change log does not or needs bringing up to date (the
    /// driver's script then runs).
    public var installedTriggers: ParsedSQL
    /// How a list of table names is bound as `:tables`.
    public var tablesArgument: @Sendable ([String]) -> SQLValue
    /// A sync read's delta over an endpoint's statement (its SQL text), for its key (result
    /// labels) whose columns, as the statement answers them, are the last argument.
    public var delta: @Sendable (_ sql: String, _ key: [String], _ keyColumns: [Column]) -> SyncDeltaSQL

    public init(
        tableExists: ParsedSQL, tableColumns: ParsedSQL, position: ParsedSQL, probe: ParsedSQL, changedKeys: ParsedSQL, changes: ParsedSQL,
        newestPrunable: ParsedSQL, prune: ParsedSQL, advanceHorizon: ParsedSQL, installedTriggers: ParsedSQL,
        tablesArgument: @escaping @Sendable ([String]) -> SQLValue,
        delta: @escaping @Sendable (_ sql: String, _ key: [String], _ keyColumns: [Column]) -> SyncDeltaSQL,
        changeCount: ParsedSQL? = nil
    ) {
        self.changeCount = changeCount
        self.installedTriggers = installedTriggers
        self.tableExists = tableExists
        self.tableColumns = tableColumns
        self.position = position
        self.probe = probe
        self.delta = delta
        self.changedKeys = changedKeys
        self.changes = changes
        self.newestPrunable = newestPrunable
        self.prune = prune
        self.advanceHorizon = advanceHorizon
        self.tablesArgument = tablesArgument
    }
}

extension ChangeTracking {
    public func estimatedRows(of sql: ParsedSQL, _ parameters: [SQLValue]) throws -> Int? { nil }

    public func commitWatch() -> (any CommitWatch)? { nil }

    /// Creates the change log and each table's triggers unless they are all there, in a
    /// transaction of its own; several processes may do so at once. Throws when the role may
    /// not (the database's message says why): creating triggers takes the tables' owner, so a
    /// service that runs as another role needs them made once by the owner. Returns whether it
    /// created anything.
    @discardableResult
    public func installChangeTracking(_ tables: [TrackedTable]) throws -> Bool {
        let names = self.changeTrackingTriggers(tables)
        let statements = try self.changeLogStatements
        let check = statements.installedTriggers
        let found = try self.queryAll([BoundStatement(check, try check.bind(["names": statements.tablesArgument(names)]))])
        if case .integer(let count)? = found.first?.rows.first?.first, count == Int64(names.count) { return false }
        try self.runRequest(statementTimeout: nil, transaction: .always(readOnly: false)) {
            try self.executeScript(try self.changeTrackingScript(tables))
        }
        return true
    }

    /// The column names of `table`; nil when the database has no such table.
    public func columns(ofTable table: String) throws -> [String]? {
        let statements = try self.changeLogStatements
        let results = try self.queryAll([
            BoundStatement(statements.tableExists, try statements.tableExists.bind(["table": .text(table)])),
            BoundStatement(statements.tableColumns, try statements.tableColumns.bind(["table": .text(table)])),
        ])
        switch results.first?.rows.first?.first {
        case .bool(true)?: break
        case .integer(let count)? where count > 0: break
        default: return nil
        }
        return results[1].rows.compactMap { row in
            if case .text(let name)? = row.first { return name }
            return nil
        }
    }

    /// See the protocol's contract; one round trip.
    public func changeLogPosition() throws -> ChangeLogPosition {
        let statement = try self.changeLogStatements.position
        return try ChangeLogPosition(row: self.queryAll([BoundStatement(statement, [])]).first?.rows.first ?? [])
    }

    /// ``changeLogPosition()`` and, in the same round trip, how many changes to `tables` are at
    /// or after `since`, counted up to `limit` (nil when the driver counts none:
    /// ``ChangeLogStatements/changeCount``). The position is read first, as the protocol's
    /// contract asks of a sync read.
    public func changeLogPosition(countingSince since: Int64, tables: [String], limit: Int) throws -> (position: ChangeLogPosition, changes: Int?) {
        let statements = try self.changeLogStatements
        guard let count = statements.changeCount else { return (try self.changeLogPosition(), nil) }
        let arguments = Self.countArguments(statements, since, tables, limit)
        let results = try self.queryAll([BoundStatement(statements.position, []), BoundStatement(count, try count.bind(arguments))])
        return (try ChangeLogPosition(row: results.first?.rows.first ?? []), Self.counted(results.dropFirst().first))
    }

    /// How many changes to `tables` are at or after `since`, counted up to `limit`; nil when
    /// the driver counts none (``ChangeLogStatements/changeCount``).
    public func countChanges(since: Int64, tables: [String], limit: Int) throws -> Int? {
        let statements = try self.changeLogStatements
        guard let count = statements.changeCount else { return nil }
        let results = try self.queryAll([BoundStatement(count, try count.bind(Self.countArguments(statements, since, tables, limit)))])
        return Self.counted(results.first)
    }

    /// The count ``ChangeLogStatements/changeCount`` answered; nil without one.
    private static func counted(_ result: QueryResult?) -> Int? {
        guard case .integer(let counted)? = result?.rows.first?.first else { return nil }
        return Int(counted)
    }

    private static func countArguments(_ statements: ChangeLogStatements, _ since: Int64, _ tables: [String], _ limit: Int) -> [String: SQLValue] {
        ["position": .integer(since), "tables": statements.tablesArgument(tables), "limit": .integer(Int64(limit))]
    }

    /// See ``ChangeLogProbeReading``; one statement, outside any transaction it is not given.
    public func probeChangeLog() throws -> ChangeLogProbeReading {
        let statement = try self.changeLogStatements.probe
        let row = try self.queryAll([BoundStatement(statement, [])]).first?.rows.first ?? []
        guard row.count == 3, case .integer(let position) = row[0] else {
            throw DatabaseError(.other, message: "the change log's position could not be read")
        }
        var horizon: Int64 = 0
        if case .integer(let value) = row[1] { horizon = value }
        var newest: Int64 = 0
        if case .integer(let value) = row[2] { newest = value }
        return ChangeLogProbeReading(position: ChangeLogPosition(position: position, horizon: horizon), newest: newest)
    }

    /// The distinct keys that writes to `tables` (by ``TrackedTable/logName``) touched at or
    /// after `position`.
    public func changedKeys(since position: Int64, tables: [String]) throws -> [[SQLValue]] {
        let statements = try self.changeLogStatements
        let arguments: [String: SQLValue] = ["position": .integer(position), "tables": statements.tablesArgument(tables)]
        let rows = try self.queryAll([BoundStatement(statements.changedKeys, try statements.changedKeys.bind(arguments))]).first?.rows ?? []
        return rows.compactMap { row in
            guard case .text(let text)? = row.first else { return nil }
            return ChangeKeyText.values(text)
        }
    }

    /// The log's position, then every change at or after `position` (one round trip on
    /// PostgreSQL): what a poller of the log reads (``ChangeFeed``). The position is read
    /// first, so a change not at or after it is among the changes (the protocol's contract).
    public func changes(since position: Int64) throws -> (position: ChangeLogPosition, changes: [LoggedChange]) {
        let statements = try self.changeLogStatements
        let results = try self.queryAll([
            BoundStatement(statements.position, []),
            BoundStatement(statements.changes, try statements.changes.bind(["position": .integer(position)])),
        ])
        let position = try ChangeLogPosition(row: results.first?.rows.first ?? [])
        let changes: [LoggedChange] = results[1].rows.compactMap { row in
            guard row.count == 3, case .integer(let writer) = row[0], case .text(let table) = row[1], case .text(let text) = row[2],
                let key = ChangeKeyText.values(text)
            else { return nil }
            return LoggedChange(writer: writer, table: table, key: key)
        }
        return (position, changes)
    }

    /// Deletes the changes older than `seconds` and moves the horizon past them, in a
    /// transaction of its own; returns how many were deleted.
    public func pruneChanges(olderThan seconds: Int) throws -> Int {
        let statements = try self.changeLogStatements
        return try self.runRequest(statementTimeout: nil, transaction: .always(readOnly: false)) {
            let newest = statements.newestPrunable
            let found = try self.queryAll([BoundStatement(newest, try newest.bind(["seconds": .integer(Int64(seconds))]))])
            guard case .integer(let last)? = found.first?.rows.first?.first else { return 0 }
            let deleted = try self.execute(statements.prune, try statements.prune.bind(["horizon": .integer(last)]))
            _ = try self.execute(statements.advanceHorizon, try statements.advanceHorizon.bind(["horizon": .integer(last)]))
            return deleted
        }
    }
}

extension TrackedTable {
    /// The name its changes carry in the log: the table and its key columns (`pet(name)`), so
    /// that two endpoints keyed by other columns of one table never read each other's keys.
    public var logName: String { "\(self.name)(\(self.keyColumns.joined(separator: ",")))" }

    /// A short name for its triggers, the same for the same ``logName`` in every process (eight
    /// hex digits of FNV-1a).
    public var triggerSuffix: String {
        var hash: UInt32 = 2_166_136_261
        for byte in self.logName.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }

    /// `column` as `columns` (a table's, as its database lists them) spell it: the exact name,
    /// else the one name that differs only in ASCII case (an unquoted identifier, which
    /// PostgreSQL folds to lower case and SQLite compares without case); nil when there is no
    /// such column or several.
    public static func spelling(of column: String, among columns: [String]) -> String? {
        if columns.contains(column) { return column }
        let folded = column.lowercased()
        let matches = columns.filter { $0.lowercased() == folded }
        return matches.count == 1 ? matches[0] : nil
    }

    /// Whether `name` is usable as a tracked table or column without quoting surprises: ASCII
    /// letters, digits and underscores, not starting with a digit.
    public static func isPlainIdentifier(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return name.utf8.allSatisfy { byte in
            byte == UInt8(ascii: "_") || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
    }
}
