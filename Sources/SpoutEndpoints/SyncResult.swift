import HTTPTypes
import SpoutCore
import SpoutHTTP
import Synchronization

/// A sync read (`GET <path>?since=<cursor>`): what changed in the caller's result since the
/// cursor, the keys of the rows that left it, and the cursor to continue from; or, for
/// `since=0`, the whole result and a cursor (docs/endpoints.md, Sync reads).
///
/// First, for a cursor, the shared probe of the change log (``ChangeLogProbe``), started after
/// the request arrived (unless an earlier probe saw a change at or after the cursor): when it
/// saw no change at or after the cursor, the answer is its position as the new cursor and
/// nothing else, sent whole (with a `Content-Length`), without a session of the read's own. A
/// cursor at or before the pruned horizon is `410 Gone`.
///
/// Otherwise, in order, on one connection of the primary, in one read-only transaction with
/// the caller's role and claims:
/// 1. The change log's position (``SpoutCore/ChangeTracking/changeLogPosition()``): the new
///    cursor. A cursor at or before the pruned horizon is `410 Gone`. In the same round trip,
///    where the driver has a delta that reads the statement once, the changes since the
///    cursor are counted, up to what ``SpoutCore/SyncDeltaChoice`` needs to choose.
/// 2. The body streams (``SpoutCore/SyncBodyWriter``): the cursor; the keys the tracked
///    tables' writes touched since the cursor that are not in the caller's result now
///    (deleted rows, rows moved out of the filters, given to another owner or hidden by
///    row-level security); then the rows of the result whose keys those writes touched,
///    with the details asked for, their bytes as the ordinary read's. Both come from one
///    statement that joins the log to the endpoint's own (``SpoutCore/SyncDeltaSQL``, the
///    driver's: a search per changed key, or, for many changes against a statement not much
///    larger, the statement read once), the keys to forget first (``SpoutCore/SyncDeltaCursor``).
///
/// A row that changes while this runs may come twice (now and in the next read), never not
/// at all: the order is the change log's contract.
struct SyncResult: ResponseProducer {
    /// The endpoint's statement for this request (filters applied) with its details attached.
    var stream: RowStream
    var database: Database
    var sync: EndpointSync
    /// The cursor's position; nil for the whole result.
    var since: Int64?
    var statementTimeout: Duration?
    var session: RequestSession?
    /// The probes and key types sync reads share.
    var state: SyncState
    /// Seals the cursor of a position for this endpoint, its arguments and the caller.
    var seal: @Sendable (Int64) -> String
    /// The cursor as the request sent it, when sealed with the key ``seal`` seals with: what
    /// sealing ``since`` again would give (a spelling of it), answered as it is.
    var sentCursor: String?

    func produce(status: HTTPResponse.Status, headers: HTTPFields, through exchange: ResponseExchange) async throws {
        let format: SyncBodyWriter.Format
        switch ContentNegotiation.format(accept: exchange.acceptHeader) {
        case .json?: format = .json
        case .jsonLines?: format = .jsonLines
        default: throw HTTPError(status: .notAcceptable, message: "not acceptable: a sync read answers application/json or application/x-ndjson")
        }
        var fields = headers
        fields.replaceOrAdd(.contentType, format == .json ? OutputFormat.json().contentType : OutputFormat.jsonLines.contentType)
        // Each cursor is read once; what it answers is the caller's alone.
        fields.replaceOrAdd(.cacheControl, "no-store")
        let head = fields
        if let since = self.since, let body = try await self.unchanged(since: since, format: format) {
            exchange.send(status: status, headers: head, body: body, rows: 0)
            return
        }
        try exchange.admitStream()
        let work = DatabaseWork(
            readOnly: true, onReplica: false, isStream: true, statementTimeout: self.statementTimeout,
            transaction: .always(readOnly: true), session: self.session)
        let started = Mutex<StreamingResponseSink?>(nil)
        let result: Result<Int, any Error>
        do {
            let rows = try await self.database.withSession(work) { session in
                try await session.runLast { connection in
                    try self.read(on: connection, format: format) {
                        let sink = exchange.startStream(status: status, headers: head)
                        started.withLock { $0 = sink }
                        return sink
                    }
                }
            }
            result = .success(rows)
        } catch {
            guard started.withLock({ $0 }) != nil else { throw error }
            result = .failure(error)
        }
        if let sink = started.withLock({ $0 }) { exchange.finishStream(sink, result: result) }
    }

    /// The whole body of a read from `since` when the shared probe saw no change at or after
    /// it (the probe's position alone, as the new cursor); nil when it saw one, or could not
    /// tell (the read itself then says why). No probe when an earlier one saw a change at or
    /// after `since` already.
    private func unchanged(since: Int64, format: SyncBodyWriter.Format) async throws -> [UInt8]? {
        let probe = self.state.probe(of: self.database)
        guard !probe.sawChange(since: since), let reading = try? await probe.read() else { return nil }
        guard since > reading.position.horizon else { throw SyncCursorExpired() }
        guard reading.newest < since else { return nil }
        let whole = CollectingSink()
        let body = SyncBodyWriter(format: format, sink: whole)
        let position = reading.position.position
        try body.begin(cursor: (position == since ? self.sentCursor : nil) ?? self.seal(position))
        try body.end()
        return whole.bytes
    }

    /// Steps 1 and 2 on `connection` (blocking); `startStream` makes the sink once the cursor
    /// is known to be current. The sink sends the head with its first chunk, so a statement
    /// that fails before any (the body's buffer holds the cursor until then) still fails with
    /// a status (``SpoutHTTP/ResponseExchange/finishStream(_:result:timing:trailers:)``).
    /// Returns the rows written.
    private func read(
        on connection: any DatabaseConnection, format: SyncBodyWriter.Format, startStream: () -> StreamingResponseSink
    ) throws -> Int {
        guard let log = connection as? any ChangeTracking else {
            throw DatabaseError(.unsupported, message: "this database keeps no change log")
        }
        let tables = self.sync.tables.map(\.logName)
        let position: ChangeLogPosition
        var counted: Int?
        if let since = self.since {
            (position, counted) = try log.changeLogPosition(countingSince: since, tables: tables, limit: SyncDeltaChoice.minimumChanges)
            guard since > position.horizon else { throw SyncCursorExpired() }
        } else {
            position = try log.changeLogPosition()
        }
        let dateFormat = self.database.configuration.dateFormat
        guard let since = self.since else {
            let body = SyncBodyWriter(format: format, sink: startStream())
            try body.begin(cursor: self.seal(position.position))
            var whole = self.stream
            whole.rowLimit = nil
            try whole.write(as: .jsonLines, to: body.rowSink, on: connection, dateFormat: dateFormat)
            try body.end()
            return body.rows
        }
        let statements = try log.changeLogStatements
        let delta = try self.delta(on: connection, statements: statements)
        var arguments = self.stream.arguments
        arguments[SyncQuery.sinceParameter] = .integer(since)
        arguments[SyncQuery.tablesParameter] = statements.tablesArgument(tables)
        var statement = delta.changes
        if let scanned = delta.scanned, let counted, try self.scans(counted: counted, since: since, tables: tables, on: log) {
            statement = scanned
        }
        let body = SyncBodyWriter(format: format, sink: startStream())
        try body.begin(cursor: self.seal(position.position))
        var changes = RowStream(statement, arguments)
        for attachment in self.stream.attachments { changes.attach(attachment.key, attachment.stream) }
        _ = try changes.run(as: .jsonLines, to: body.rowSink, on: connection, dateFormat: dateFormat) { cursor in
            try SyncDeltaCursor(cursor, key: self.sync.key, keysRepeat: delta.keysRepeat) { key in
                try body.deleted(labels: self.sync.key, values: SyncQuery.typed(key, as: delta.keyColumns), dateFormat: dateFormat)
            }
        }
        try body.end()
        return body.rows
    }

    /// Whether the delta reads the statement once (``SpoutCore/SyncDeltaChoice``), given the
    /// changes counted up to ``SpoutCore/SyncDeltaChoice/minimumChanges``: the statement's
    /// estimate is asked for only when that many were found, and the changes counted further
    /// only as far as that estimate makes worth it.
    private func scans(counted: Int, since: Int64, tables: [String], on log: any ChangeTracking) throws -> Bool {
        guard counted >= SyncDeltaChoice.minimumChanges else { return false }
        let sql = try self.stream.statement(for: log.dialect)
        guard let rows = try log.estimatedRows(of: sql, try sql.bind(self.stream.arguments)) else { return false }
        let needed = SyncDeltaChoice.changesToScan(estimatedRows: rows)
        let changes = needed <= counted ? counted : try log.countChanges(since: since, tables: tables, limit: needed) ?? 0
        return SyncDeltaChoice.scans(changes: changes, estimatedRows: rows)
    }

    /// The delta of the endpoint's statement, made once per statement text and key (two
    /// endpoints may share one statement with keys of their own): its key columns read by a
    /// statement that returns no row, then the driver's delta parsed.
    private func delta(on connection: any DatabaseConnection, statements: ChangeLogStatements) throws -> SyncDeltaStatement {
        try self.state.deltas.value(for: SyncDeltaName(key: self.sync.key, statement: self.stream.sql)) {
            let sql = try ParsedSQL(SyncQuery.keys(of: self.stream.sql, key: self.sync.key, limit: 0), dialect: connection.dialect)
            let cursor = try connection.query(sql, try sql.bind(self.stream.arguments), options: QueryOptions())
            defer { cursor.close() }
            _ = try cursor.next()
            let keyColumns = cursor.columns
            let delta = statements.delta(self.stream.sql, self.sync.key, keyColumns)
            return SyncDeltaStatement(
                keyColumns: keyColumns, changes: try ParsedSQL(delta.changes, dialect: connection.dialect),
                scanned: try delta.scanned.map { try ParsedSQL($0, dialect: connection.dialect) }, keysRepeat: delta.keysRepeat)
        }
    }
}

/// A sync cursor older than the change log keeps (410 Gone): the client starts again.
struct SyncCursorExpired: Error, HTTPResponseError {
    var status: HTTPResponse.Status { .gone }
    var responseBody: [UInt8] {
        var object = JSONObjectWriter()
        object.add("error", "sync cursor expired: the changes since it are no longer kept; sync again from the beginning (since=0)")
        object.add("parameter", EndpointSync.sinceParameter)
        return object.finished
    }
}

