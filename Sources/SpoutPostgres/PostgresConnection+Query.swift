import CLibPQ
import SpoutCore

extension PostgresConnection {
    /// Runs `sql` and returns a cursor whose ``SpoutCore/RowCursor/columns`` are known.
    ///
    /// Without `options.interleaved` the statement streams in single-row mode (the first
    /// result is read before returning); it is prepared once per connection, unless
    /// `options.planForValues` (then it is sent unnamed, and planned for the values bound). With it, the caller must have an open transaction
    /// (else ``SpoutCore/DatabaseError/Code/unsupported``); rows come through a server-side
    /// cursor `spout_cN`, `options.batchSize` per FETCH, and the first batch is fetched here.
    public func query(_ sql: ParsedSQL, _ parameters: [SQLValue], options: QueryOptions) throws -> any RowCursor {
        let handle = try self.idleHandle()
        let parameters = try PostgresTextParameters(parameters)
        if options.interleaved {
            return try self.openServerCursor(
                sql, parameters, batchSize: max(1, options.batchSize), prefetch: options.prefetch, handle: handle)
        }
        try self.openImplicitTransactionIfNeeded()
        self.statistics.recordStatement()
        self.statementStarting()
        // Planned for these values: sent unnamed, as without session state.
        let name = options.planForValues ? nil : try self.preparedStatementName(for: sql.text, parameters, handle: handle)
        guard self.send(sql.text, prepared: name, parameters, handle: handle) == 1 else {
            let error = self.makeError(nil)
            self.drainResults(handle)
            throw error
        }
        try self.enterBusyState(self.stateMachine.streamOpened())
        _ = PQsetSingleRowMode(handle)
        let first = self.awaitingAnswer { PQgetResult(handle) }
        let status = first.map { PQresultStatus($0) } ?? PGRES_FATAL_ERROR
        switch status {
        case PGRES_SINGLE_TUPLE:
            let cursor = PostgresSingleRowCursor(connection: self, firstRow: first!)
            self.activeStream = cursor
            return cursor
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK:
            let description = self.resultDescriptions.description(of: first!)
            PQclear(first)
            self.endStream(cancelling: false)
            return PostgresSingleRowCursor(finishedWith: description)
        default:
            let error = self.makeError(first)
            PQclear(first)
            self.endStream(cancelling: false)
            throw error
        }
    }

    // MARK: Single-row streams

    /// The next result of the running single-row query, or nil when there is none.
    func nextStreamResult() -> OpaquePointer? {
        guard self.stateMachine.isStreaming, let handle = self.handle else { return nil }
        return self.awaitingAnswer { PQgetResult(handle) }
    }

    /// Ends the single-row query: reads what is left until libpq reports no more results.
    /// With `cancelling`, a statement still running on the server is cancelled first (only
    /// when the rest has not already arrived).
    func endStream(cancelling: Bool) {
        let action = self.stateMachine.streamEnded(cancelling: cancelling)
        guard action != .nothing else { return }
        self.activeStream = nil
        self.cleanUp(action)
    }

    // MARK: Server-side cursors

    private func openServerCursor(
        _ sql: ParsedSQL,
        _ parameters: PostgresTextParameters,
        batchSize: Int,
        prefetch: Bool,
        handle: OpaquePointer
    ) throws -> any RowCursor {
        guard PQtransactionStatus(handle) != PQTRANS_IDLE else {
            throw DatabaseError(
                .unsupported,
                message: "an interleaved query needs an open transaction: call begin(readOnly:) first"
            )
        }
        let name = self.statementNames.nextCursorName()
        self.statistics.recordStatement()
        self.statementStarting()
        // DECLARE cannot reuse a prepared statement (its cursor name changes every time), so
        // it goes through PQexecParams with the same text parameters.
        let declare = "DECLARE \(name) NO SCROLL CURSOR FOR \(sql.text)"
        let result = self.awaitingAnswer {
            parameters.withUnsafeCValues { count, values, types in PQexecParams(handle, declare, count, types, values, nil, nil, 0) }
        }
        defer {
            PQclear(result)
            self.noteTransactionState()
        }
        guard let result, PQresultStatus(result) == PGRES_COMMAND_OK else {
            throw self.makeError(result)
        }
        return try PostgresServerCursor(
            connection: self, name: name, batchSize: batchSize, prefetch: prefetch, epoch: self.stateMachine.transactionEpoch)
    }

    /// Runs `FETCH count FROM name` and returns its result (owned by the caller).
    /// - Throws: when the cursor's transaction has ended, or the FETCH fails.
    /// With `binary`, the rows come in binary form (a `FETCH` sent with the extended protocol
    /// sets its own result format, whatever the cursor was declared with).
    func fetch(from name: String, count: Int, epoch: Int, binary: Bool = false) throws -> OpaquePointer {
        let handle = try self.cursorHandle(name, epoch: epoch)
        let fetch = "FETCH \(count) FROM \(name)"
        return try self.fetchedRows(
            self.awaitingAnswer { binary ? PQexecParams(handle, fetch, 0, nil, nil, nil, nil, 1) : PQexec(handle, fetch) })
    }

    /// The connection for a statement on cursor `name`, once its transaction is known to last.
    private func cursorHandle(_ name: String, epoch: Int) throws -> OpaquePointer {
        try self.obey(self.stateMachine.cursorStatementRequested(name: name, epoch: epoch))
        let handle = try self.openHandle()
        self.statementStarting()
        return handle
    }

    /// `result` when it holds a FETCH's rows; otherwise frees it and throws its error.
    private func fetchedRows(_ result: OpaquePointer?) throws -> OpaquePointer {
        guard let result, PQresultStatus(result) == PGRES_TUPLES_OK else {
            let error = self.makeError(result)
            PQclear(result)
            self.noteTransactionState()
            throw error
        }
        return result
    }

    /// Sends `FETCH count FROM name` without waiting for its result: the server works on the
    /// next batch while the caller handles the current one. Until ``receiveFetch()`` the
    /// connection takes no other statement. `binary` as for ``fetch(from:count:epoch:binary:)``.
    func sendFetch(from name: String, count: Int, epoch: Int, binary: Bool = false) throws {
        let handle = try self.cursorHandle(name, epoch: epoch)
        let fetch = "FETCH \(count) FROM \(name)"
        let sent = binary ? PQsendQueryParams(handle, fetch, 0, nil, nil, nil, nil, 1) : PQsendQuery(handle, fetch)
        guard sent == 1 else {
            throw self.makeError(nil)
        }
        try self.enterBusyState(self.stateMachine.fetchSent())
    }

    /// The result of the `FETCH` sent by ``sendFetch(from:count:epoch:)`` (owned by the
    /// caller), waiting for it if needed.
    /// - Throws: when the FETCH failed (statement timeout, cancel, lost connection).
    func receiveFetch() throws -> OpaquePointer {
        try self.obey(self.stateMachine.fetchReceived())
        let handle = try self.openHandle()
        let result = self.awaitingAnswer {
            let result = PQgetResult(handle)
            // A single statement has one result, then none.
            while let extra = PQgetResult(handle) { PQclear(extra) }
            return result
        }
        return try self.fetchedRows(result)
    }

    /// Drops a `FETCH` sent ahead whose rows are no longer wanted. With `keepingTransaction`
    /// (the cursor is closed, the caller goes on in its transaction) reads it to its end;
    /// otherwise cancels it if it still runs and reads what was already sent.
    func abandonFetch(keepingTransaction: Bool) {
        self.cleanUp(self.stateMachine.fetchAbandoned(keepingTransaction: keepingTransaction))
    }

    /// Closes a server-side cursor, if its transaction is still open and usable (otherwise the
    /// cursor is already gone, or goes with the transaction). Errors are ignored.
    func closeServerCursor(_ name: String, epoch: Int) {
        guard let handle = self.handle, self.stateMachine.cursorCanBeClosed(epoch: epoch, status: self.transactionStatus) else {
            return
        }
        self.statementStarting()
        PQclear(self.awaitingAnswer { PQexec(handle, "CLOSE \(name)") })
        self.noteTransactionState()
    }
}

/// The columns of a result and how to decode each.
struct PostgresResultDescription {
    var columns: [Column]
    var decoders: [PostgresColumnDecoder]

    init(_ result: OpaquePointer) {
        let count = PQnfields(result)
        self.columns = []
        self.decoders = []
        self.columns.reserveCapacity(Int(count))
        self.decoders.reserveCapacity(Int(count))
        for index in 0..<count {
            let oid = PQftype(result, index)
            let decoder = PostgresColumnDecoder(oid: oid)
            let label = PQfname(result, index).map { String(cString: $0) } ?? ""
            self.columns.append(Column(label: label, type: decoder.columnType, databaseTypeName: PostgresTypeOID.names[oid]))
            self.decoders.append(decoder)
        }
    }

    init() {
        self.columns = []
        self.decoders = []
    }
}
