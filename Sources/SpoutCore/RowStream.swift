/// A query with named arguments and attached child queries, written as rows to a sink.
///
/// Each row is a JSON object keyed by column label, in column order (dotted labels nest).
/// ``attach(_:_:)`` adds an array of child rows to every row: the child's named parameters
/// bind first from the parent row's columns (by label), then from the stream's arguments.
/// Attached streams may attach again, to any depth.
///
/// Nothing runs until ``write(as:shape:to:on:dateFormat:attachmentBatchSize:fetchSize:)``. Top-level rows are encoded as they are read
/// and never held together; attached rows are fetched for a window of parent rows at a time
/// (``DatabaseConfiguration/attachmentBatchSize``), with one child query per window on
/// PostgreSQL (a `LATERAL` join against the window's keys, passed as arrays), and with one
/// cached prepared statement per parent on SQLite (in process, no round trip). Each deeper
/// level is fetched the same way, in windows of the rows of the level above: the statements
/// grow with levels × windows, never with rows. An array holds one window of parents and
/// everything below it; a single row (object) whose attachments have attachments streams
/// each of its arrays instead, in windows of their own (``streamsAttachments(shape:)``), so
/// memory holds one window of them and everything below it.
public struct RowStream: Sendable {
    /// An attached child stream and the key its array appears under.
    ///
    /// A class with constant fields: the executor and the pipelined plan pass attachments
    /// around for every request, and sharing one costs a retain where a copy of the key and
    /// the child stream cost one per reference they hold.
    public final class Attachment: Sendable {
        public let key: String
        public let stream: RowStream

        init(key: String, stream: RowStream) {
            self.key = key
            self.stream = stream
        }
    }

    public let sql: String
    public var arguments: [String: SQLValue]
    /// `sql` already parsed, when the stream was made from a ``ParsedSQL``: writing it on a
    /// connection of that dialect then needs no look-up in the shared parse cache.
    let parsed: ParsedSQL?
    public private(set) var attachments: [Attachment] = []
    /// Stop after this many top-level rows (nil: no limit). When the limit stops the stream,
    /// one more row is read to tell a cut result from one that happened to end there
    /// (``StreamOutcome/truncated``).
    public var rowLimit: Int?
    /// Column labels whose values in the last row written are reported in
    /// ``StreamOutcome/lastKey`` (a page's keyset key, a stored file's media type); empty: none
    /// are kept. A label the result does not have fails the stream.
    public var keyLabels: [String] = []
    /// Whether the statement itself returns at most ``rowLimit`` + 1 rows (its own `LIMIT`, as
    /// a ``KeysetQuery`` page has). An array without attachments is then read in one statement
    /// (PostgreSQL: single-row mode, no server-side cursor and no transaction of its own: one
    /// round trip instead of `BEGIN`, `DECLARE`, `FETCH`, `CLOSE`, `COMMIT`). Meant for results
    /// read whole; a stream that waits for a slow client keeps its statement open meanwhile.
    public var isLimitedBySQL = false
    /// Whether the statement's rows are read whole before any is encoded or any attachment
    /// fetched (``DatabaseConnection/queryAll(_:)``), never through a cursor that others
    /// interleave with. For a statement that writes (`INSERT ... RETURNING`): PostgreSQL
    /// declares no server-side cursor for one, and a write's answer is held whole before it is
    /// sent anyway.
    public var readsWhole = false
    /// The database that made the stream (``Database/query(_:_:)``); nil for one made alone.
    public let database: Database?

    /// A stream not tied to a database; write it with ``write(as:shape:to:on:dateFormat:attachmentBatchSize:fetchSize:)``.
    public init(_ sql: String, _ arguments: [String: SQLValue] = [:]) {
        self.init(sql, arguments, database: nil)
    }

    init(_ sql: String, _ arguments: [String: SQLValue], database: Database?) {
        self.sql = sql
        self.arguments = arguments
        self.parsed = nil
        self.database = database
    }

    /// A stream of a statement parsed beforehand (servers parse each endpoint's SQL once).
    public init(_ parsed: ParsedSQL, _ arguments: [String: SQLValue] = [:]) {
        self.init(parsed, arguments, database: nil)
    }

    init(_ parsed: ParsedSQL, _ arguments: [String: SQLValue], database: Database?) {
        self.sql = parsed.source
        self.arguments = arguments
        self.parsed = parsed
        self.database = database
    }

    /// The statement for `dialect`: the one parsed beforehand, or the parse cache's.
    public func statement(for dialect: SQLDialect) throws -> ParsedSQL {
        if let parsed = self.parsed, parsed.dialect == dialect { return parsed }
        return try ParsedSQL.cached(self.sql, dialect: dialect)
    }

    /// Nests the rows of `sql` as an array under `key` in every row.
    public mutating func attach(_ key: String, _ sql: String) {
        self.attachments.append(Attachment(key: key, stream: RowStream(sql, [:], database: nil)))
    }

    /// Nests the rows of the parsed `sql` under `key` in every row.
    public mutating func attach(_ key: String, _ sql: ParsedSQL) {
        self.attachments.append(Attachment(key: key, stream: RowStream(sql, [:], database: nil)))
    }

    /// Nests the rows of `child` (which may have attachments of its own) under `key`.
    public mutating func attach(_ key: String, _ child: RowStream) {
        self.attachments.append(Attachment(key: key, stream: child))
    }

    /// A copy of this stream with `sql` attached under `key`.
    public func attaching(_ key: String, _ sql: String) -> RowStream {
        var copy = self
        copy.attach(key, sql)
        return copy
    }

    /// Runs the query on `connection` and encodes its rows into `sink`, chunk by chunk.
    ///
    /// Blocks while it reads from the database and while the sink applies backpressure. Calls
    /// `sink.finish` exactly once on success. Throws ``RowStreamError`` before writing any
    /// byte when the shape needs a row and there is none, or when CSV meets attachments.
    ///
    /// Rows are read in batches of `fetchSize` (``DatabaseConfiguration/fetchSize``), and the
    /// statement timeout bounds the database's work for each batch, never the time the sink
    /// makes the stream wait: on PostgreSQL an `.array` result is read through a server-side
    /// cursor whose every `FETCH` is a statement under the timeout (the cursor needs a
    /// transaction, which the driver opens read-only when the caller has none:
    /// ``DatabaseConnection/withInterleavedQueries(_:)``); on SQLite the cursor renews its
    /// deadline after each batch. Parents with attachments
    /// are read in windows of `attachmentBatchSize` rows instead.
    /// - Returns: the number of top-level rows written.
    @discardableResult
    public func write(
        as format: OutputFormat,
        shape: ResultShape = .array,
        to sink: any ByteSink,
        on connection: any DatabaseConnection,
        dateFormat: DateFormat? = nil,
        attachmentBatchSize: Int? = nil,
        fetchSize: Int? = nil
    ) throws -> Int {
        try self.run(
            as: format, shape: shape, to: sink, on: connection, dateFormat: dateFormat,
            attachmentBatchSize: attachmentBatchSize, fetchSize: fetchSize
        ).rows
    }

    /// ``write(as:shape:to:on:dateFormat:attachmentBatchSize:fetchSize:)``, reporting what the
    /// response's head or trailer needs beyond the row count: whether ``rowLimit`` cut the
    /// result and the ``keyLabels`` values of the last row. `adapting`, when given, stands
    /// between the statement's cursor and the encoder (``SyncDeltaCursor``): its columns and
    /// rows are the ones written.
    public func run(
        as format: OutputFormat,
        shape: ResultShape = .array,
        to sink: any ByteSink,
        on connection: any DatabaseConnection,
        dateFormat: DateFormat? = nil,
        attachmentBatchSize: Int? = nil,
        fetchSize: Int? = nil,
        adapting: ((any RowCursor) throws -> any RowCursor)? = nil
    ) throws -> StreamOutcome {
        if format == .csv && !self.attachments.isEmpty { throw RowStreamError.attachmentsNotAllowedInCSV }
        let dateFormat = dateFormat ?? self.database?.configuration.dateFormat ?? .epochMilliseconds
        let window = attachmentBatchSize ?? self.database?.configuration.attachmentBatchSize ?? 500
        let executor = AttachmentExecutor(connection: connection, batchSize: window)

        if self.readsWhole {
            let parsed = try self.statement(for: connection.dialect)
            let result = try connection.queryAll([BoundStatement(parsed, try parsed.bind(self.arguments))])
            let rows = result.first ?? QueryResult(columns: [], rows: [])
            let whole = BufferedCursor(rows)
            return try self.encode(try adapting?(whole) ?? whole, executor: executor, format: format, shape: shape, dateFormat: dateFormat, sink: sink)
        }
        let options = self.queryOptions(shape: shape, window: shape == .array ? window : 1, fetchSize: fetchSize)
        // A single row whose attachments stream reads them through cursors of their own.
        let interleaves = options.interleaved || self.streamsAttachments(shape: shape)
        let read = { () throws -> StreamOutcome in
            let parsed = try self.statement(for: connection.dialect)
            let cursor = try connection.query(parsed, try parsed.bind(self.arguments), options: options)
            // Closed before the driver ends what it opened for it: a limit may stop reading
            // while the cursor reads ahead.
            defer { cursor.close() }
            return try self.encode(try adapting?(cursor) ?? cursor, executor: executor, format: format, shape: shape, dateFormat: dateFormat, sink: sink)
        }
        return interleaves ? try connection.withInterleavedQueries(read) : try read()
    }

    /// ``run(as:shape:to:on:dateFormat:attachmentBatchSize:fetchSize:)`` with the date format,
    /// attachment window and fetch size of `configuration` (the database's the work was asked
    /// of, also when a replica answers).
    public func run(
        as format: OutputFormat, shape: ResultShape, to sink: any ByteSink, on connection: any DatabaseConnection,
        configuration: DatabaseConfiguration
    ) throws -> StreamOutcome {
        try self.run(
            as: format, shape: shape, to: sink, on: connection, dateFormat: configuration.dateFormat,
            attachmentBatchSize: configuration.attachmentBatchSize, fetchSize: configuration.fetchSize)
    }

    /// Whether a single row's attachments are streamed (``AttachmentExecutor/stream(_:parent:parentColumns:inherited:depth:into:)``)
    /// rather than held: when any has attachments of its own (a department, its employees and
    /// their salaries), as the rows below one parent are then as many as an array's.
    func streamsAttachments(shape: ResultShape) -> Bool {
        shape != .array && self.attachments.contains { !$0.stream.attachments.isEmpty }
    }

    /// How ``run(as:shape:to:on:dateFormat:attachmentBatchSize:fetchSize:)`` queries: an array
    /// is read in batches through a cursor that lets other statements interleave (on
    /// PostgreSQL a server-side cursor, which lives in a transaction): children are fetched
    /// between windows of parent rows, and each batch is a statement of its own under the
    /// statement timeout, so waiting for a slow client never counts against it. A single-row
    /// shape needs none: its one row is read, the statement closed, and then the children
    /// fetched. Neither does a page without attachments (``isLimitedBySQL``), which is planned
    /// for its values instead (its best plan depends on them, see
    /// ``QueryOptions/planForValues``).
    func queryOptions(shape: ResultShape, window: Int, fetchSize: Int?) -> QueryOptions {
        let interleaved = shape == .array && !(self.isLimitedBySQL && self.rowLimit != nil && self.attachments.isEmpty)
        let batch = self.attachments.isEmpty ? (fetchSize ?? self.database?.configuration.fetchSize ?? DatabaseConfiguration.defaultFetchSize) : window
        // Without attachments nothing else runs on the connection meanwhile: read ahead.
        return QueryOptions(
            interleaved: interleaved, batchSize: batch, prefetch: self.attachments.isEmpty, planForValues: self.isLimitedBySQL)
    }

    /// The database's plan of the statement ``run(as:shape:to:on:dateFormat:attachmentBatchSize:fetchSize:)``
    /// sends on `connection` for `shape` (not its attachments'), with the same options and in
    /// what the driver opens for such a query (``DatabaseConnection/withInterleavedQueries(_:)``).
    /// Runs nothing else.
    public func explain(shape: ResultShape = .array, on connection: any DatabaseConnection) throws -> [String] {
        let options = self.queryOptions(shape: shape, window: 1, fetchSize: nil)
        let parsed = try self.statement(for: connection.dialect)
        let explain = { try connection.explain(parsed, try parsed.bind(self.arguments), options: options) }
        return options.interleaved ? try connection.withInterleavedQueries(explain) : try explain()
    }

    /// Encodes the rows of `cursor` (and their attachments, through `executor`) into `sink`.
    func encode(
        _ cursor: any RowCursor, executor: AttachmentExecutor, format: OutputFormat, shape: ResultShape,
        dateFormat: DateFormat, sink: any ByteSink
    ) throws -> StreamOutcome {
        var limit = self.rowLimit ?? Int.max
        if shape != .array { limit = 1 }
        var encoder = RowEncoder(
            format: format, shape: shape, columns: cursor.columns, attachmentKeys: self.attachments.map(\.key),
            dateFormat: dateFormat, sink: sink
        )
        let keyIndices = try self.keyIndices(in: cursor.columns)
        var lastKey: [SQLValue] = []
        var count = 0
        var exhausted = false
        if self.attachments.isEmpty {
            if format != .csv, let writer = cursor as? any JSONWritingCursor {
                (count, exhausted) = try Self.encodeRows(
                    cursor, JSONWritingCursorValues(cursor: writer), limit: limit, keyIndices: keyIndices, lastKey: &lastKey,
                    encoder: &encoder)
            } else {
                (count, exhausted) = try Self.encodeRows(
                    cursor, CursorValues(cursor: cursor), limit: limit, keyIndices: keyIndices, lastKey: &lastKey,
                    encoder: &encoder)
            }
        } else {
            var window: [BufferedRow] = []
            window.reserveCapacity(executor.batchSize)
            let width = cursor.columns.count
            while !exhausted && count < limit {
                window.removeAll(keepingCapacity: true)
                while window.count < executor.batchSize && count + window.count < limit {
                    guard try cursor.next() else {
                        exhausted = true
                        break
                    }
                    window.append(BufferedRow(values: (0..<width).map(cursor.value(at:)), children: []))
                }
                if window.isEmpty { break }
                if shape != .array { cursor.close() }
                if self.streamsAttachments(shape: shape) {
                    // One parent, its attachments streamed in windows of their own.
                    let parent = window[0]
                    if !keyIndices.isEmpty { lastKey = keyIndices.map { parent.values[$0] } }
                    encoder.begin()
                    try encoder.streamedRow(parent) { encoder, index, depth in
                        try executor.stream(
                            self.attachments[index], parent: parent, parentColumns: cursor.columns, inherited: self.arguments,
                            depth: depth, into: &encoder)
                    }
                    count += 1
                    continue
                }
                let layouts = try executor.fill(&window, parentColumns: cursor.columns, attachments: self.attachments, inherited: self.arguments)
                if let last = window.last, !keyIndices.isEmpty { lastKey = keyIndices.map { last.values[$0] } }
                for row in window {
                    if count == 0 { encoder.begin() }
                    try encoder.row(row, children: Array(zip(layouts, row.children)))
                    count += 1
                }
            }
        }
        if count == 0 {
            if shape != .array { throw RowStreamError.noRow }
            encoder.begin()
        }
        // Stopped by the limit: one more row tells a cut result from one that ended there.
        let truncated = try shape == .array && self.rowLimit != nil && !exhausted && count >= limit && cursor.next()
        if truncated && self.isLimitedBySQL {
            // The statement's own LIMIT ends it within a row or two: read it to its end, so
            // closing it needs no cancel.
            while try cursor.next() {}
        }
        try encoder.end()
        return StreamOutcome(rows: count, truncated: truncated, lastKey: lastKey)
    }

    /// Reads and encodes the rows of `cursor` (no attachments) up to `limit`; `values` is the
    /// cursor's current row. Returns the rows written and whether the cursor ran out.
    private static func encodeRows(
        _ cursor: any RowCursor, _ values: some RowValues, limit: Int, keyIndices: [Int], lastKey: inout [SQLValue],
        encoder: inout RowEncoder
    ) throws -> (count: Int, exhausted: Bool) {
        var count = 0
        while count < limit {
            guard try cursor.next() else { return (count, true) }
            if count == 0 { encoder.begin() }
            try encoder.row(values, children: [])
            if !keyIndices.isEmpty { lastKey = keyIndices.map(cursor.value(at:)) }
            count += 1
        }
        return (count, false)
    }

    /// The positions of ``keyLabels`` among `columns`.
    private func keyIndices(in columns: [Column]) throws -> [Int] {
        try self.keyLabels.map { label in
            guard let index = columns.firstIndex(where: { $0.label == label }) else {
                throw DatabaseError(.unsupported, message: "the result has no column labelled \(label) (a page key or a media type)")
            }
            return index
        }
    }
}

/// What writing a ``RowStream`` produced besides its bytes.
public struct StreamOutcome: Sendable, Hashable {
    /// The top-level rows written.
    public var rows: Int
    /// Whether ``RowStream/rowLimit`` stopped the stream while the query had more rows.
    public var truncated: Bool
    /// The values of ``RowStream/keyLabels`` in the last row written (empty when there are no
    /// key labels or no rows).
    public var lastKey: [SQLValue]

    public init(rows: Int, truncated: Bool = false, lastKey: [SQLValue] = []) {
        self.rows = rows
        self.truncated = truncated
        self.lastKey = lastKey
    }
}

/// The current row of a cursor as ``RowValues``.
private struct CursorValues: RowValues {
    let cursor: any RowCursor
    @inline(__always)
    func value(at index: Int) -> SQLValue { self.cursor.value(at: index) }
}

/// The current row of a ``JSONWritingCursor``: its values are written as JSON by the cursor.
private struct JSONWritingCursorValues: RowValues {
    let cursor: any JSONWritingCursor
    @inline(__always)
    func value(at index: Int) -> SQLValue { self.cursor.value(at: index) }
    @inline(__always)
    func writeJSON(at index: Int, dateFormat: DateFormat, to out: inout ChunkedOutput) {
        self.cursor.writeJSON(at: index, dateFormat: dateFormat, to: &out)
    }
    @inline(__always)
    func writeJSONObject(_ layout: CompactObjectLayout, dateFormat: DateFormat, to out: inout ChunkedOutput) {
        self.cursor.writeJSONObject(layout, dateFormat: dateFormat, to: &out)
    }
}
