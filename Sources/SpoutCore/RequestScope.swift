/// The one home of the rules a request's statements run under: the statement timeout, and
/// the transaction around them. Every ``DatabaseSession/run(_:)`` goes through
/// ``DatabaseConnection/runRequest(statementTimeout:transaction:session:_:)``.
public enum RequestTransaction: Sendable, Hashable {
    /// No transaction: each statement commits on its own.
    case none
    /// A read on a read-only lease: in a read-only transaction only where the dialect reads
    /// in one (``SQLDialect/readsInTransaction``: SQLite, so parent and children see one
    /// snapshot); PostgreSQL's read-only session needs none (the driver opens one for a
    /// stream's cursor, ``DatabaseConnection/withInterleavedQueries(_:)``).
    case read
    /// A write, or a read that must see one snapshot: in a transaction that commits only when
    /// `body` returns (read-only or not).
    case always(readOnly: Bool)
    /// A write whose statements all read one snapshot, taken at the first: a write to a row
    /// another transaction changed after it fails with
    /// ``DatabaseError/Code/serializationFailure`` instead of overwriting the change
    /// (``DatabaseConnection/beginSnapshot(session:)``). For a read, a comparison and a write
    /// that must see nothing change in between (conditional writes).
    case snapshot
}

extension DatabaseConnection {
    /// Sets the statement timeout (when given), runs `body` in the transaction `transaction`
    /// asks for, and commits; when `body` throws, rolls back what it opened and rethrows.
    /// Blocking: call it off the event loop, on the connection's thread.
    ///
    /// With a `session`, where the connection applies sessions
    /// (``DatabaseConnection/appliesRequestSessions``: PostgreSQL) the request always runs in a
    /// transaction (a read in a read-only one), and the session's role and claims are set in
    /// it before `body` runs, in the round trip that opens it, local to the transaction
    /// (``RequestSession``): its commit or rollback ends them, so the next request on the
    /// connection never sees them. SQLite has no roles or settings: there the session changes
    /// nothing (claims reach SQLite as parameters).
    public func runRequest<T>(
        statementTimeout: Duration?, transaction: RequestTransaction, session: RequestSession? = nil, _ body: () throws -> T
    ) throws -> T {
        if let statementTimeout { try self.setStatementTimeout(milliseconds: statementTimeout.statementTimeoutMilliseconds) }
        let session = self.appliesRequestSessions ? session : nil
        let readOnly: Bool
        switch transaction {
        case .none where session == nil:
            return try body()
        case .none:
            readOnly = false
        case .read:
            guard self.dialect.readsInTransaction || session != nil else { return try body() }
            readOnly = true
        case .always(let mode):
            readOnly = mode
        case .snapshot:
            readOnly = false
        }
        if transaction == .snapshot {
            try self.beginSnapshot(session: session)
        } else if let session {
            try self.begin(readOnly: readOnly, session: session)
        } else {
            try self.begin(readOnly: readOnly)
        }
        return try self.committing(body)
    }

    /// Runs `body` in the transaction just begun: commits when it returns (unless `body` ended
    /// it, as ``DatabaseConnection/commit(after:)`` does), rolls back when it throws (unless
    /// the error already ended the transaction).
    public func committing<T>(_ body: () throws -> T) throws -> T {
        do {
            let value = try body()
            if self.isInTransaction { try self.commit() }
            return value
        } catch {
            if self.isInTransaction { try? self.rollback() }
            throw error
        }
    }
}
