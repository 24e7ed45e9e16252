import SpoutCore

/// What PostgreSQL adds to a request's transaction and to a replica's health: the role and
/// claims of a ``SpoutCore/RequestSession``, cursors that need a transaction, and replay lag.
extension PostgresConnection {
    /// Server-side cursors (`DECLARE ... CURSOR`) exist only inside a transaction: a read-only
    /// one around `body` when the caller has none.
    public func withInterleavedQueries<T>(_ body: () throws -> T) throws -> T {
        guard !self.isInTransaction else { return try body() }
        try self.begin(readOnly: true)
        return try self.committing(body)
    }

    public var appliesRequestSessions: Bool { true }

    /// ``begin(readOnly:)``'s statements and, after them, one `SELECT set_config(...)`: the
    /// role (when the session names one) and `request.jwt.claims`, both bound as parameters and
    /// local to the transaction; all in one pipeline, one round trip. When a statement fails
    /// (a role the connection's user may not take), what was opened is rolled back.
    public func begin(readOnly: Bool, session: RequestSession) throws {
        try self.begin(readOnly: readOnly, snapshot: false, session: session)
    }

    /// `BEGIN ISOLATION LEVEL REPEATABLE READ, READ WRITE`, with the session's settings in the
    /// same round trip when there is one: a row another transaction changes after the first
    /// statement's snapshot cannot be written (40001, ``SpoutCore/DatabaseError/Code/serializationFailure``).
    public func beginSnapshot(session: RequestSession?) throws {
        guard let session else {
            do {
                try self.runCommand(self.beginStatements(readOnly: false, snapshot: true).joined(separator: "; "))
            } catch {
                throw self.standbyRefusal(of: error, readOnly: false)
            }
            self.stateMachine.transactionBegun(implicit: false)
            return
        }
        try self.begin(readOnly: false, snapshot: true, session: session)
    }

    private func begin(readOnly: Bool, snapshot: Bool, session: RequestSession) throws {
        var statements = try self.beginStatements(readOnly: readOnly, snapshot: snapshot).map {
            BoundStatement(try ParsedSQL.cached($0, dialect: .postgres), [])
        }
        statements.append(try self.sessionStatement(session))
        do {
            try self.runSettings(statements)
        } catch {
            if self.isInTransaction { try? self.rollback() }
            throw self.standbyRefusal(of: error, readOnly: readOnly)
        }
        self.stateMachine.transactionBegun(implicit: false)
    }

    /// The statement that sets what `session` holds, local to the transaction it runs in: the
    /// role, the claims, and an `application_name` that starts with the trace context
    /// (``tracedApplicationName(_:)``); each bound as a parameter, so the text is one of a few
    /// and stays prepared. ``begin(readOnly:session:)``'s, and the first of each implicit
    /// transaction of an event-driven run with a session.
    func sessionStatement(_ session: RequestSession) throws -> BoundStatement {
        var calls: [String] = []
        var arguments: [String: SQLValue] = [:]
        if let role = session.role {
            calls.append("set_config('role', :role, true)")
            arguments["role"] = .text(role)
        }
        if let claims = session.claimsJSON {
            calls.append("set_config('\(RequestSession.claimsSetting)', :claims, true)")
            arguments["claims"] = .text(claims)
        }
        if let trace = session.traceContext {
            calls.append("set_config('application_name', :applicationName, true)")
            arguments["applicationName"] = .text(self.tracedApplicationName(trace))
        }
        let sql = try ParsedSQL.cached("SELECT " + (calls.isEmpty ? "1" : calls.joined(separator: ", ")), dialect: .postgres)
        return BoundStatement(sql, try sql.bind(arguments))
    }

    /// `<trace context> <the connection's application_name>`: the trace first, since
    /// PostgreSQL keeps 63 bytes of an `application_name` in `pg_stat_activity`.
    func tracedApplicationName(_ traceContext: String) -> String {
        self.applicationName.isEmpty ? traceContext : traceContext + " " + self.applicationName
    }

    /// 0 when the replica has replayed all it received (an idle primary writes nothing, so the
    /// time since the last replayed transaction says nothing), else the age of the last
    /// replayed transaction.
    public func replicationLag() throws -> Int? {
        let sql = try ParsedSQL.cached(
            """
            SELECT CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
                        ELSE COALESCE(CAST(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()) * 1000 AS bigint), 0)
                   END
            """, dialect: .postgres)
        let cursor = try self.query(sql, [], options: QueryOptions())
        defer { cursor.close() }
        guard try cursor.next(), case .integer(let lag) = cursor.value(at: 0) else { return 0 }
        return Int(lag)
    }
}
