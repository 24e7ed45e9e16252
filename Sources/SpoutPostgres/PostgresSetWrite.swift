import SpoutCore

extension PostgresConnection {
    /// A ``PostgresSetWrite`` for `statement` when it is an insert ``PostgresSetInsert``
    /// rewrites, the caller has a transaction open, and its role may create temporary tables;
    /// nil otherwise (the records then run one by one). Three round trips: the parameters'
    /// types, the privilege, the table.
    public func setWrite(for statement: ParsedSQL) throws -> (any SetWrite)? {
        guard self.isInTransaction, !statement.parameterNames.isEmpty, let insert = PostgresSetInsert(statement) else { return nil }
        let described = try self.describe(statement, bytesParameters: [], parameterTypes: true)
        let types = described.parameterTypes
        guard types.count == statement.parameterNames.count, types.allSatisfy({ !$0.isEmpty && $0 != "unknown" && $0 != "-" })
        else { return nil }
        let privilege = try ParsedSQL.cached("SELECT has_database_privilege(current_database(), 'TEMPORARY')", dialect: .postgres)
        guard case .bool(true)? = try self.queryAll([BoundStatement(privilege, [])]).first?.rows.first?.first else { return nil }
        return try PostgresSetWrite(connection: self, insert: insert, parameterTypes: types)
    }
}

/// Applies many records of one insert as sets (``SpoutCore/SetWrite``): the records go into a
/// temporary table through `COPY` as they arrive, then the rewritten insert
/// (``PostgresSetInsert``) runs over them, ``chunk`` records per statement.
///
/// Contract, beyond ``SpoutCore/SetWrite``'s:
/// - The table (`pg_temp.spout_bulk_records`: the record's number, its primary key; its tag;
///   a text column per parameter, cast in the insert to the type PostgreSQL infers for it) is
///   dropped when the transaction ends.
/// - The `COPY` runs without a statement timeout (it lasts as long as the client takes to
///   send the records); each insert statement runs under the one in effect before.
/// - The inserts run after a savepoint. When one fails (an error, a record that produced no
///   row, a row a trigger dropped), the transaction goes back to it, the chunks before run
///   again, and the failing chunk is halved, each half under a savepoint of its own, down to
///   the first failing record: its error is the one a statement of its own would raise, as
///   the records before it are applied. A write that succeeds makes one savepoint; one that
///   fails a few dozen at most.
final class PostgresSetWrite: SetWrite {
    /// The records one insert statement runs over at most: its time stays far below a
    /// statement timeout, and its rows within PostgreSQL's `work_mem`.
    static let chunk = 8192
    static let table = "pg_temp.spout_bulk_records"

    private let connection: PostgresConnection
    private let statement: ParsedSQL
    private let readBack: ParsedSQL
    private let parameterCount: Int
    private let statementTimeout: Int
    /// The copy the records go into; nil once finished or abandoned.
    private var inserter: PostgresBulkInserter?
    private var appended = 0

    init(connection: PostgresConnection, insert: PostgresSetInsert, parameterTypes: [String]) throws {
        self.connection = connection
        self.parameterCount = parameterTypes.count
        self.statement = try ParsedSQL(insert.statement(records: Self.table, types: parameterTypes), dialect: .postgres)
        let names = (1...parameterTypes.count).map(PostgresSetInsert.parameterColumn)
        self.readBack = try ParsedSQL(
            "SELECT " + (["spout_tag"] + names).joined(separator: ", ") + " FROM \(Self.table) WHERE spout_ord = :ord", dialect: .postgres)
        self.statementTimeout = connection.statementTimeoutInEffect
        let columns = names.map { "\($0) text" }
        try connection.runCommand(
            "CREATE TEMPORARY TABLE \(Self.table) (" + (["spout_ord bigint PRIMARY KEY", "spout_tag bigint"] + columns).joined(separator: ", ")
                + ") ON COMMIT DROP")
        try connection.setStatementTimeout(milliseconds: 0)
        self.inserter = try connection.copyIn(into: Self.table, columns: ["spout_ord", "spout_tag"] + names)
    }

    deinit {
        self.abandon()
    }

    func append(_ parameters: [SQLValue], tag: Int) throws {
        guard let inserter = self.inserter, parameters.count == self.parameterCount else {
            throw DatabaseError(.other, message: "the set write has ended, or a record has the wrong number of values")
        }
        self.appended += 1
        var row: [SQLValue] = [.integer(Int64(self.appended)), .integer(Int64(tag))]
        row.append(contentsOf: parameters)
        try inserter.append(row)
    }

    func flush() throws {
        try self.inserter?.flush()
    }

    func abandon() {
        self.inserter?.abandon()
        self.inserter = nil
    }

    func finish() throws -> SetWriteOutcome {
        guard let inserter = self.inserter else {
            throw DatabaseError(.other, message: "the set write has ended")
        }
        self.inserter = nil
        _ = try inserter.finish()
        try self.connection.setStatementTimeout(milliseconds: self.statementTimeout)
        let count = self.appended
        guard count > 0 else { return .applied(records: 0, changed: 0) }
        try self.connection.runCommand("SAVEPOINT spout_set")
        var changed = 0
        if let failed = try self.runChunks(1...count, changed: &changed) {
            try self.connection.runCommand("ROLLBACK TO SAVEPOINT spout_set")
            // The chunks before the failed one ran: they run again, then the failed one is halved.
            var before = 0
            if failed.lowerBound > 1, try self.runChunks(1...(failed.lowerBound - 1), changed: &before) != nil {
                try self.connection.runCommand("ROLLBACK TO SAVEPOINT spout_set")
                return try self.locate(from: 1, failing: nil, count: count, changed: 0)
            }
            return try self.locate(from: failed.lowerBound, failing: failed.upperBound, count: count, changed: before)
        }
        try self.connection.runCommand("RELEASE SAVEPOINT spout_set")
        return .applied(records: count, changed: changed)
    }

    // MARK: Running

    /// What one insert statement over a range of records did.
    private enum RangeResult {
        case applied(changed: Int)
        /// It failed with `error`, or (nil) a record produced no row or a row was dropped.
        case failed((any Error)?)
    }

    /// Runs `records` a chunk at a time, adding the rows inserted to `changed`; returns the
    /// first chunk that failed (the transaction is then failed, or holds its rows), or nil.
    private func runChunks(_ records: ClosedRange<Int>, changed: inout Int) throws -> ClosedRange<Int>? {
        var first = records.lowerBound
        while first <= records.upperBound {
            let range = first...min(first + Self.chunk - 1, records.upperBound)
            switch try self.run(range) {
            case .applied(let inserted): changed += inserted
            case .failed: return range
            }
            first = range.upperBound + 1
        }
        return nil
    }

    /// With the records before `from` applied, finds the first record that fails: halves a
    /// range known to fail (`failing`: `from` up to it) under savepoints until one record is
    /// left, and runs the rest a chunk at a time when none is known. `changed`: the rows the
    /// records before `from` changed.
    private func locate(from: Int, failing: Int?, count: Int, changed: Int) throws -> SetWriteOutcome {
        var first = from
        var failingEnd = failing
        var changed = changed
        while first <= count {
            let last = failingEnd.map { first + ($0 - first) / 2 } ?? min(first + Self.chunk - 1, count)
            try self.connection.runCommand("SAVEPOINT spout_locate")
            let result = try self.run(first...last)
            switch result {
            case .applied(let inserted):
                try self.connection.runCommand("RELEASE SAVEPOINT spout_locate")
                changed += inserted
                first = last + 1
                if let end = failingEnd, first > end { failingEnd = nil }
            case .failed(let error):
                try self.connection.runCommand("ROLLBACK TO SAVEPOINT spout_locate")
                try self.connection.runCommand("RELEASE SAVEPOINT spout_locate")
                guard first < last else { return try self.failure(of: first, error) }
                failingEnd = last
            }
        }
        // Every record ran, halves and all (what failed together did not apart).
        return .applied(records: count, changed: changed)
    }

    /// Runs the insert over `records`.
    private func run(_ records: ClosedRange<Int>) throws -> RangeResult {
        let bound = BoundStatement(
            self.statement,
            try self.statement.bind(["spout_first": .integer(Int64(records.lowerBound)), "spout_last": .integer(Int64(records.upperBound))]))
        let row: [SQLValue]
        do {
            row = try self.connection.queryAll([bound]).first?.rows.first ?? []
        } catch let error as DatabaseError where !error.code.isConnectionFailure {
            return .failed(error)
        }
        guard row.count == 3, case .integer(let inserted) = row[0], case .integer(let produced) = row[1],
            case .integer(let producing) = row[2]
        else { throw DatabaseError(.other, message: "the set insert answered an unexpected row") }
        guard inserted == produced, producing == records.count else { return .failed(nil) }
        return .applied(changed: Int(inserted))
    }

    /// The failure of record `number`: its tag and values read back.
    private func failure(of number: Int, _ error: (any Error)?) throws -> SetWriteOutcome {
        let row = try self.connection.queryAll([BoundStatement(self.readBack, [.integer(Int64(number))])]).first?.rows.first ?? []
        guard case .integer(let tag)? = row.first else {
            throw DatabaseError(.other, message: "the set write's record \(number) is missing")
        }
        return .failed(tag: Int(tag), parameters: Array(row.dropFirst()), error: error)
    }
}
