import CLibPQ
import SpoutCore

extension PostgresConnection {
    /// Starts `COPY table (columns) FROM STDIN` (text format). Table and column names are
    /// quoted; a dot in `table` separates the schema. The connection is busy until the
    /// inserter finishes.
    public func bulkInsert(into table: String, columns: [String]) throws -> any BulkInserter {
        try self.copyIn(into: table, columns: columns)
    }

    /// ``bulkInsert(into:columns:)``, typed.
    func copyIn(into table: String, columns: [String]) throws -> PostgresBulkInserter {
        let handle = try self.idleHandle()
        guard !columns.isEmpty else {
            throw DatabaseError(.invalidSQL, message: "a bulk insert needs at least one column")
        }
        let columnList = try columns.map(PostgresIdentifier.quoted).joined(separator: ", ")
        let sql = "COPY \(try PostgresIdentifier.quotedTable(table)) (\(columnList)) FROM STDIN"
        self.statistics.recordStatement()
        self.statementStarting()
        let result = self.awaitingAnswer { PQexec(handle, sql) }
        defer { PQclear(result) }
        guard let result, PQresultStatus(result) == PGRES_COPY_IN else {
            let error = self.makeError(result)
            self.noteTransactionState()
            throw error
        }
        try self.enterBusyState(self.stateMachine.copyStarted())
        let inserter = PostgresBulkInserter(connection: self, columnCount: columns.count)
        self.activeCopy = inserter
        return inserter
    }

    /// Sends a chunk of COPY data.
    func putCopyData(_ bytes: [UInt8]) throws {
        try self.obey(self.stateMachine.copyDataRequested())
        let handle = try self.openHandle()
        // Blocks while the server reads no more (its socket's buffers full).
        let sent = self.awaitingAnswer {
            bytes.withUnsafeBytes { buffer in
                PQputCopyData(handle, buffer.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(buffer.count))
            }
        }
        guard sent == 1 else {
            let error = self.makeError(nil)
            self.abandonCopy()
            throw error
        }
    }

    /// Ends the COPY and returns the number of rows the server stored.
    func endCopy() throws -> Int {
        try self.obey(self.stateMachine.copyDataRequested())
        let handle = try self.openHandle()
        guard self.awaitingAnswer({ PQputCopyEnd(handle, nil) }) == 1 else {
            let error = self.makeError(nil)
            self.abandonCopy()
            throw error
        }
        let result = self.awaitingAnswer { PQgetResult(handle) }
        var rows = 0
        var failure: DatabaseError?
        if let result, PQresultStatus(result) == PGRES_COMMAND_OK {
            rows = Int(String(cString: PQcmdTuples(result))) ?? 0
        } else {
            failure = self.makeError(result)
        }
        PQclear(result)
        self.activeCopy = nil
        self.cleanUp(self.stateMachine.copyEnded(abandoning: false))
        if let failure {
            throw failure
        }
        return rows
    }

    /// Ends an unfinished COPY with an error, so nothing of it is stored and the connection is
    /// idle again (an open transaction is then failed).
    func abandonCopy() {
        let action = self.stateMachine.copyEnded(abandoning: true)
        guard action != .nothing else { return }
        self.activeCopy = nil
        self.cleanUp(action)
    }
}
