import HTTPTypes
import SpoutCore
import SpoutHTTP
import Synchronization

/// A sync read (`GET <path>?since=<cursor>`): what changed in the caller's result since the
/// cursor, the keys of the rows that left it, and the cursor to continue from; or, for
/// `since=0`, the whole result and a cursor (docs/endpoints.md, Sync reads).
///
/// In order, on one connection of the primary, in one read-only transaction with the caller's
/// role and claims:
/// 1. The change log's position (``SpoutCore/ChangeTracking/changeLogPosition()``): the new
///    cursor. A cursor at or before the pruned horizon is `410 Gone`.
/// 2. The distinct keys the tracked tables' writes touched since the cursor, and which of
///    them are in the caller's result now (one statement per batch of keys). The others are
///    the keys to forget: deleted rows, rows moved out of the filters, given to another owner
///    or hidden by row-level security.
/// 3. The body streams (``SpoutCore/SyncBodyWriter``): the cursor, the keys to forget, then the
///    rows whose keys changed, read by the endpoint's own statement (wrapped to those keys,
///    ``SpoutCore/SyncQuery``) with the details asked for, their bytes as the ordinary read's.
///    When nothing changed since the cursor the body is the new cursor alone, sent whole
///    (with a `Content-Length`, compressed or not as any small answer).
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
    /// Seals the cursor of a position for this endpoint, its arguments and the caller.
    var seal: @Sendable (Int64) -> String
    /// Keys per statement of step 2 and 3: a key of one column goes in one list parameter, so
    /// many fit; a key of several columns takes a parameter per value.
    var batchSize: Int { self.sync.key.count == 1 ? 8192 : 512 }

    func produce(status: HTTPResponse.Status, headers: HTTPFields, through exchange: ResponseExchange) async throws {
        let format: SyncBodyWriter.Format
        switch ContentNegotiation.format(accept: exchange.acceptHeader) {
        case .json?: format = .json
        case .jsonLines?: format = .jsonLines
        default: throw HTTPError(status: .notAcceptable, message: "not acceptable: a sync read answers application/json or application/x-ndjson")
        }
        try exchange.admitStream()
        var fields = headers
        fields.replaceOrAdd(.contentType, format == .json ? OutputFormat.json().contentType : OutputFormat.jsonLines.contentType)
        // Each cursor is read once; what it answers is the caller's alone.
        fields.replaceOrAdd(.cacheControl, "no-store")
        let head = fields
        let work = DatabaseWork(
            readOnly: true, onReplica: false, isStream: true, statementTimeout: self.statementTimeout,
            transaction: .always(readOnly: true), session: self.session)
        let started = Mutex<StreamingResponseSink?>(nil)
        let result: Result<Int, any Error>
        do {
            let answer = try await self.database.withSession(work) { session in
                try await session.run { connection in
                    try self.read(on: connection, format: format) { exchange.startStream(status: status, headers: head) } started: { sink in
                        started.withLock { $0 = sink }
                    }
                }
            }
            switch answer {
            case .streamed(let rows):
                result = .success(rows)
            case .whole(let body):
                exchange.send(status: status, headers: head, body: body, rows: 0)
                return
            }
        } catch {
            guard started.withLock({ $0 }) != nil else { throw error }
            result = .failure(error)
        }
        if let sink = started.withLock({ $0 }) { exchange.finishStream(sink, result: result) }
    }

    /// What ``read(on:format:startStream:started:)`` answered.
    private enum Answer: Sendable {
        /// The body went through the stream's sink: the rows written.
        case streamed(rows: Int)
        /// Nothing changed since the cursor: the whole body (the new cursor alone), sent with
        /// a `Content-Length` instead of a stream.
        case whole([UInt8])
    }

    /// Steps 1 to 3 on `connection` (blocking); `startStream` makes the sink once nothing can
    /// fail with a status any more.
    private func read(
        on connection: any DatabaseConnection, format: SyncBodyWriter.Format, startStream: () -> StreamingResponseSink,
        started: (StreamingResponseSink) -> Void
    ) throws -> Answer {
        guard let log = connection as? any ChangeTracking else {
            throw DatabaseError(.unsupported, message: "this database keeps no change log")
        }
        let position = try log.changeLogPosition()
        var changed: [[SQLValue]] = []
        var forget: [[SQLValue]] = []
        var keyColumns: [Column] = []
        if let since = self.since {
            guard since > position.horizon else { throw SyncCursorExpired() }
            changed = try log.changedKeys(since: since, tables: self.sync.tables.map(\.logName))
            var present: Set<[SQLValue]> = []
            for batch in SyncQuery.batches(of: changed, size: self.batchSize) {
                let keys = try self.presentKeys(batch, on: connection)
                keyColumns = keys.columns
                present.formUnion(keys.rows)
            }
            let typed = changed.map { SyncQuery.typed($0, as: keyColumns) }
            forget = typed.filter { !present.contains($0) }
            changed = typed.filter { present.contains($0) }
        }
        if self.since != nil, changed.isEmpty, forget.isEmpty {
            let whole = CollectingSink()
            let body = SyncBodyWriter(format: format, sink: whole)
            try body.begin(cursor: self.seal(position.position))
            try body.end()
            return .whole(whole.bytes)
        }
        let sink = startStream()
        started(sink)
        let body = SyncBodyWriter(format: format, sink: sink)
        try body.begin(cursor: self.seal(position.position))
        let dateFormat = self.database.configuration.dateFormat
        for key in forget { try body.deleted(labels: self.sync.key, values: key, dateFormat: dateFormat) }
        if self.since == nil {
            var whole = self.stream
            whole.rowLimit = nil
            try whole.write(as: .jsonLines, to: body.rowSink, on: connection, dateFormat: dateFormat)
        } else {
            for batch in SyncQuery.batches(of: changed, size: self.batchSize) {
                try self.rowsStream(batch).write(as: .jsonLines, to: body.rowSink, on: connection, dateFormat: dateFormat)
            }
        }
        try body.end()
        return .streamed(rows: body.rows)
    }

    /// The keys among `batch` that the caller's result holds now, typed as the result's key
    /// columns are.
    private func presentKeys(_ batch: [[SQLValue]], on connection: any DatabaseConnection) throws -> (columns: [Column], rows: [[SQLValue]]) {
        let sql = try ParsedSQL(SyncQuery.keys(of: self.stream.sql, key: self.sync.key, count: batch.count, dialect: connection.dialect), dialect: connection.dialect)
        // Planned for the keys bound: a plan made for any list (PostgreSQL's generic plan)
        // tests each row against the list element by element instead of hashing it.
        let cursor = try connection.query(sql, try sql.bind(self.arguments(for: batch)), options: QueryOptions(planForValues: true))
        defer { cursor.close() }
        var rows: [[SQLValue]] = []
        while try cursor.next() { rows.append((0..<cursor.columns.count).map(cursor.value(at:))) }
        return (cursor.columns, rows)
    }

    /// The endpoint's rows whose keys are `batch`, with its details.
    private func rowsStream(_ batch: [[SQLValue]]) -> RowStream {
        var stream = RowStream(
            SyncQuery.rows(of: self.stream.sql, key: self.sync.key, count: batch.count, dialect: self.database.dialect), self.arguments(for: batch))
        for attachment in self.stream.attachments { stream.attach(attachment.key, attachment.stream) }
        return stream
    }

    /// The request's arguments and the keys of `batch` (``SyncQuery/keyParameter(_:_:)``).
    private func arguments(for batch: [[SQLValue]]) -> [String: SQLValue] {
        SyncQuery.arguments(self.stream.arguments, keys: batch)
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
