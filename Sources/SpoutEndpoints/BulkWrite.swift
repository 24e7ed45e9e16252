import Crypto
import HTTPTypes
import Logging
import NIOCore
import SpoutCore
import SpoutHTTP

/// Serves `POST <path>/bulk` of an endpoint with `bulk: true`: many records in one request, a
/// JSON array, JSON Lines or CSV body (``SpoutHTTP/BulkFormat``), read as it arrives
/// (``SpoutHTTP/RequestBodyStream``).
///
/// Contract:
/// - Each record runs the endpoint's statement with its fields as the arguments (after the
///   path's keys, which every record shares, and the query's), converted and checked as a
///   single write's are, with the caller's claims; all records in one transaction, on one
///   connection, under the caller's role and claims (row-level security applies to each).
/// - The answer is 200 `{"records":N,"changed":M}`: the records applied and the rows their
///   statements changed. An endpoint whose single write answers rows (``EndpointResult``
///   `created`, `object`, `scalar`, `rows`) adds `"keys":[…]`, every row its statements
///   returned (`INSERT … RETURNING`), in record order, each as a single write's JSON writes
///   it. The keys wait in a ``SpoutHTTP/SpooledBody`` (a temporary file, constant memory)
///   until the transaction commits; nothing of them reaches the client before. A record
///   that does not parse or whose argument is refused is a 400 naming its position
///   (``SpoutHTTP/BulkPosition``) and the parameter; a record whose statement changes no row
///   (another owner's, say) is a 422 naming its position; a database error names the
///   position too. Then, and when the client goes away before the body's end, nothing is
///   committed.
/// - With an `Idempotency-Key`, the request's digest covers the body, known only at its end:
///   the key is looked up first (a replay then reads the body, to compare, with no connection
///   held, and gets the answer kept, applying nothing), and claimed after the records ran, in
///   their transaction (a request under the key that committed meanwhile wins, and this one
///   rolls back to its answer).
/// - The records are read and their statements made on a thread of their own
///   (``BulkRecordReader``), ahead of the database thread, which sends them through a
///   ``SpoutCore/WritePipeline``: up to ``window`` of them in flight (PostgreSQL runs them
///   while the next are read and sent), answered in order. When every record runs the same
///   statement and no key is answered, the driver may take them as a set instead
///   (``SpoutCore/SetWrite``: PostgreSQL copies them into a temporary table and runs an
///   insert over it), with the same answers and the same record named when one fails.
/// - With an `Idempotency-Key` the answer is kept in the database whole: keys of more than
///   ``maximumKeptKeys`` bytes are a 413 and roll the write back.
/// - Memory holds the records in flight, those read ahead (``BulkRecordReader/maximumPieces``
///   pieces of the body) and the stream's window, whatever the body's size.
struct BulkWrite: Sendable {
    let handler: EndpointHandler
    /// Where the keys wait for the commit, and the body is kept (nil: `TMPDIR`, else `/tmp`).
    let temporaryDirectory: String?
    /// The most bytes of a body kept to run its records again (``BulkBodyTee``).
    let keptBodyLimit: Int
    /// The stalled bodies being kept, over every bulk endpoint.
    let keptBodies: BulkBodySlots

    /// The records applied and the rows their statements changed.
    private struct Counts: Sendable {
        var records = 0
        var changed = 0
    }

    @Sendable
    func handle(_ request: Request) async throws -> Response {
        let endpoint = self.handler.endpoint
        let contentType = request.headers[values: .contentType].first
        guard let format = BulkFormat(contentType: contentType) else {
            throw ArgumentError(.unsupportedBodyType(sent: contentType.map(MediaType.essence(of:)), accepted: BulkFormat.mediaTypes), parameter: "")
        }
        if let conditions = WriteConditions(request) {
            // Ignoring it would let the records overwrite what the client meant to protect.
            throw HTTPError(status: .badRequest, message: "\(conditions.fieldName) does not apply to a bulk write: send conditional writes one at a time")
        }
        let identity = try await self.handler.authenticate(request)
        try self.handler.checkKnown(request.query)
        guard let parsed = self.handler.parsed else { throw HTTPError(status: .internalServerError, message: "internal server error") }
        let subject = identity?.claims?.value(at: "sub")?.sqlValue.requestText(null: "", bytes: { _ in "" })
        let key = try IdempotencyKey(request, endpoint: endpoint.title, subject: subject)
        if key != nil { try await self.handler.idempotency.ensure(on: self.handler.database, logger: self.handler.logger) }
        let shared = request.rawArguments
        let parameters = self.handler.routeParameters
        let claimNames = self.handler.claimNames
        let retention = self.handler.idempotency.retentionSeconds
        let answersKeys = Self.answersKeys(endpoint.result)
        let directory = self.temporaryDirectory
        let dateFormat = self.handler.database.configuration.dateFormat
        let headDigest = IdempotencyKey.digest(ofHead: request)
        let appliesAsSet = Self.appliesAsSet(self.handler)
        let work = DatabaseWork(
            readOnly: false, statementTimeout: self.handler.timeout, transaction: .always(readOnly: false),
            session: self.handler.session(for: identity, request), cancelsWithTask: false)
        let spans = DatabaseSpans(request.span, database: self.handler.database)
        let tee = BulkBodyTee(body: request.bodyStream, directory: directory, limit: self.keptBodyLimit)
        let records = { (body: any BulkBodySource, stallBudget: Duration?) async throws -> Response in
            try await self.handler.database.withSession(work) { session in
                try await DatabaseSpans.measure(spans, "transaction") {
                    try await session.run { connection -> Response in
                        let store = key == nil ? nil : connection as? any IdempotencyStore
                        if let key, let store, let kept = try store.findIdempotencyKey(scope: key.scope, key: key.key, retentionSeconds: retention) {
                            throw KeptAnswerFound(requestHash: kept.requestHash, answer: kept.answer)
                        }
                        var digest = headDigest
                        var counts = Counts()
                        var inFlight = CircularBuffer<InFlightRecord>()
                        // The same for every record: found once.
                        var claims: [String: SQLValue] = [:]
                        identity?.bind(claimNames, into: &claims)
                        let reader = BulkRecordReader(
                            body: body, decoder: BulkRecordDecoder(format: format), head: headDigest, digesting: key != nil,
                            stallBudget: stallBudget, mayDetach: self.keptBodies.take
                        ) { [claims] record in
                            let (statement, arguments) = try Self.statement(
                                for: record, shared: shared, parameters: parameters, claims: claims, sql: parsed)
                            return (statement, InFlightRecord(position: record.position, arguments: arguments))
                        }
                        defer { reader.cancel() }
                        let keys = try answersKeys ? Keys(directory: directory, dateFormat: dateFormat) : nil
                        if appliesAsSet, let set = try connection.setWrite(for: parsed.written) {
                            counts = try Self.apply(set, reader: reader, names: parsed.written.parameterNames)
                            if let read = reader.digest { digest = read }
                        } else {
                            do {
                                try connection.withWritePipeline(window: Self.window, keepsRows: keys != nil) { answer in
                                    let record = inFlight.removeFirst()
                                    guard answer.changed > 0 else {
                                        throw BulkRecordFailure(position: record.position, error: RecordChangedNothing(), arguments: record.arguments)
                                    }
                                    counts.records += 1
                                    counts.changed += answer.changed
                                    if let keys, let rows = answer.rows { try keys.writer.append(rows) }
                                } _: { pipeline in
                                    while let item = try reader.next() {
                                        switch item {
                                        case .statement(let statement, let record):
                                            inFlight.append(record)
                                            try pipeline.send(statement)
                                        case .pieceEnded:
                                            try pipeline.flush()
                                        }
                                    }
                                    if let read = reader.digest { digest = read }
                                }
                            } catch let failed as WritePipelineFailure {
                                // Every record before the failed one was answered: it is the oldest in flight.
                                let record = inFlight.removeFirst()
                                throw BulkRecordFailure(position: record.position, error: failed.error, arguments: record.arguments)
                            }
                        }
                        let response = try Self.answer(counts, keys: keys, keyed: key != nil)
                        if let key, let store {
                            let claimed = key.digesting(digest)
                            switch try store.claimIdempotencyKey(
                                scope: claimed.scope, key: claimed.key, requestHash: claimed.requestHash, retentionSeconds: retention)
                            {
                            case .claimed:
                                try store.commitIdempotentAnswer(scope: claimed.scope, key: claimed.key, answer: IdempotencyKey.stored(response))
                            case .answered(let answer): throw AnsweredMeanwhile(response: IdempotencyKey.replay(answer))
                            case .otherRequest: throw IdempotencyKeyReused()
                            }
                        }
                        return response
                    }
                }
            }
        }
        let attempt = { (body: any BulkBodySource, stallBudget: Duration?) async throws -> Response in
            do {
                return try await records(body, stallBudget)
            } catch let found as KeptAnswerFound {
                // Compared with the body read outside the transaction: a slow replay holds no
                // connection (on SQLite, not the one writer).
                let digest = try await Self.digest(of: body, after: headDigest)
                guard found.requestHash == key?.digesting(digest).requestHash else { throw IdempotencyKeyReused() }
                guard let answer = found.answer else {
                    throw DatabaseError(.busy, message: "the idempotency key's first request has not answered")
                }
                return IdempotencyKey.replay(answer)
            }
        }
        do {
            do {
                return try await attempt(tee, Self.stallBudget)
            } catch let stalled as BulkBodyStalled {
                // The transaction is rolled back: take the rest of the body whole, then run
                // every record again from the file, without waiting for the client.
                defer { self.keptBodies.give() }
                tee.mustKeep()
                self.handler.logger.info(
                    "bulk body stalled: transaction rolled back; the records run again once the body is whole",
                    metadata: ["request.id": "\(request.id)", "endpoint": "\(endpoint.title)"])
                try await stalled.reader.finished()
                guard let whole = tee.whole else { throw BulkBodyTooLargeToKeep(limit: self.keptBodyLimit) }
                return try await attempt(KeptBulkBody(whole), nil)
            }
        } catch let answered as AnsweredMeanwhile {
            return answered.response
        } catch let failed as BulkRecordFailure {
            self.handler.logger.debug(
                "bulk write rolled back",
                metadata: ["request.id": "\(request.id)", "endpoint": "\(endpoint.title)", "bulk.position": "\(failed.position)", "error": "\(failed.error)"])
            var error = failed.error
            if let constraints = self.handler.constraints, constraints.mayTrace(error) {
                error = await constraints.trace(error, arguments: failed.arguments, on: self.handler.database)
            }
            throw PositionedError(position: failed.position, error: UnrepresentableText.naming(error, arguments: failed.arguments))
        } catch {
            self.handler.logger.debug(
                "bulk write rolled back", metadata: ["request.id": "\(request.id)", "endpoint": "\(endpoint.title)", "error": "\(error)"])
            throw error
        }
    }

    /// The statements in flight at most: sent to the database and not answered yet.
    static let window = 1024

    /// The digest of `body` after `head`, read to its end on a thread of its own (the reads
    /// block).
    private static func digest(of body: any BulkBodySource, after head: SHA256) async throws -> SHA256 {
        try await SpoutThread.result(named: "spout-bulk-read") {
            var digest = head
            while let piece = try body.next() { digest.update(data: piece) }
            return digest
        }.get()
    }

    /// How long a bulk write's transaction waits, in all, for records its client has not sent
    /// yet, before it is given up and the records run again once the body is whole.
    static let stallBudget = Duration.seconds(1)

    /// Whether the records may be offered to the driver as a set (``SpoutCore/SetWrite``):
    /// every record runs the same statement (no optional clauses), no row of it is kept (no
    /// keys answered), and no parameter takes bytes (declared `bytea` one by one, inferred in
    /// a set).
    private static func appliesAsSet(_ handler: EndpointHandler) -> Bool {
        guard !Self.answersKeys(handler.endpoint.result), let parsed = handler.parsed, parsed.clauses.clauses.isEmpty else { return false }
        return !handler.routeParameters.contains { $0.type.elementType == .bytes }
    }

    /// Appends every record the reader makes to `set` and applies them: the counts, or a
    /// ``BulkRecordFailure`` naming the first record that failed (its arguments as the database
    /// holds them). `names`: the statement's parameters, in placeholder order.
    private static func apply(_ set: any SetWrite, reader: BulkRecordReader, names: [String]) throws -> Counts {
        defer { set.abandon() }
        var first: BulkPosition?
        while let item = try reader.next() {
            switch item {
            case .statement(let statement, let record):
                if first == nil { first = record.position }
                do {
                    try set.append(statement.parameters, tag: record.position.number)
                } catch {
                    throw BulkRecordFailure(position: record.position, error: error, arguments: record.arguments)
                }
            case .pieceEnded:
                try set.flush()
            }
        }
        switch try set.finish() {
        case .applied(let records, let changed):
            return Counts(records: records, changed: changed)
        case .failed(let tag, let parameters, let error):
            var arguments: [String: SQLValue] = [:]
            for (name, value) in zip(names, parameters) { arguments[name] = value }
            let position: BulkPosition = if case .index? = first { .index(tag) } else { .line(tag) }
            throw BulkRecordFailure(position: position, error: error ?? RecordChangedNothing(), arguments: arguments)
        }
    }

    /// The statement for one record, with its arguments. Throws ``SpoutHTTP/BulkRecordError``
    /// for an argument refused, ``BulkRecordFailure`` for a statement that cannot be made.
    private static func statement(
        for record: BulkRecord, shared: RawArguments, parameters: [Parameter], claims: [String: SQLValue], sql: FilteredSQL
    ) throws -> (BoundStatement, [String: SQLValue]) {
        var raw = shared
        if shared.keys.isEmpty {
            raw = record.arguments
        } else {
            raw.merge(record.arguments)
        }
        var arguments: [String: SQLValue]
        do {
            arguments = try ArgumentConversion.convert(raw, for: parameters)
        } catch {
            throw BulkRecordError(error, at: record.position)
        }
        for (name, value) in claims { arguments[name] = value }
        do {
            let statement = try sql.statement(for: arguments)
            return (BoundStatement(statement, try statement.bind(arguments)), arguments)
        } catch {
            throw BulkRecordFailure(position: record.position, error: error, arguments: arguments)
        }
    }

    /// Whether an endpoint's bulk answer carries the keys made: its single write answers rows.
    static func answersKeys(_ result: EndpointResult) -> Bool {
        switch result {
        case .created, .object, .scalar, .rows: true
        case .none, .bytes: false
        }
    }

    /// The most bytes of keys a bulk write under an `Idempotency-Key` makes: its answer is kept
    /// in the database whole (one `bytea`/BLOB value) and read into memory to be kept and
    /// replayed.
    static let maximumKeptKeys = 4 << 20

    /// Keys at most this long are read back and sent whole; longer ones stream from the file.
    private static let wholeKeys = SpooledBody.bufferSize

    /// The answer: the counts, then the keys when the endpoint answers them. Keys of a keyed
    /// request, and short ones, are sent whole; the others stream from their file once the
    /// transaction has committed. Throws ``KeysTooLargeToKeep`` for a keyed request whose keys
    /// pass ``maximumKeptKeys``.
    private static func answer(_ counts: Counts, keys: Keys?, keyed: Bool) throws -> Response {
        var object = JSONObjectWriter()
        object.add("records", counts.records)
        object.add("changed", counts.changed)
        guard let keys else { return .bytes(object.finished, contentType: "application/json") }
        try keys.writer.finish()
        let prefix = object.finished.dropLast() + Array(#","keys":"#.utf8)
        let suffix = [UInt8(ascii: "}")]
        if keyed && keys.body.count > Self.maximumKeptKeys { throw KeysTooLargeToKeep(count: keys.body.count) }
        if keyed || keys.body.count <= Self.wholeKeys {
            return .bytes(prefix + (try keys.body.bytes()) + suffix, contentType: "application/json")
        }
        return keys.body.response(contentType: "application/json", prefix: Array(prefix), suffix: suffix, rows: keys.writer.rowCount)
    }
}

/// The keys a bulk write made, written to a temporary file as the records are answered.
private struct Keys {
    let body: SpooledBody
    let writer: ReturnedRowsWriter

    init(directory: String?, dateFormat: DateFormat) throws {
        self.body = try SpooledBody(directory: directory)
        self.writer = ReturnedRowsWriter(dateFormat: dateFormat, sink: self.body)
    }
}

/// A bulk write under an `Idempotency-Key` whose keys are too long to keep (413): nothing was
/// committed.
private struct KeysTooLargeToKeep: Error, HTTPResponseError {
    var count: Int
    var status: HTTPResponse.Status { .contentTooLarge }
    var responseBody: [UInt8] {
        var object = JSONObjectWriter()
        object.add(
            "error",
            "the keys this bulk write made (\(self.count) bytes) pass the \(BulkWrite.maximumKeptKeys >> 20) MiB an Idempotency-Key keeps: "
                + "nothing was committed; send fewer records per keyed request")
        object.add("parameter", "Idempotency-Key")
        return object.finished
    }
}

/// A record sent to the database and not answered yet: what names it when it fails.
struct InFlightRecord: Sendable {
    var position: BulkPosition
    var arguments: [String: SQLValue]
}

/// A record's statement failed (or changed nothing), with the arguments it ran with: the
/// constraint a violation names is traced to a parameter after the rollback.
private struct BulkRecordFailure: Error {
    var position: BulkPosition
    var error: any Error
    var arguments: [String: SQLValue]
}

/// A record whose statement changed no row: no such row, or not the caller's (422).
private struct RecordChangedNothing: Error, HTTPResponseError {
    var status: HTTPResponse.Status { .unprocessableContent }
    var responseBody: [UInt8] {
        ErrorResponse(status: self.status, message: "the record changed no row: there is none it applies to, or none of the caller's").body
    }
}

/// The key was answered before: the body is compared with the first request's outside the
/// transaction, then the kept answer replayed.
private struct KeptAnswerFound: Error {
    var requestHash: String
    var answer: StoredAnswer?
}

/// Another request under the same idempotency key committed while this one ran: its answer.
private struct AnsweredMeanwhile: Error {
    var response: Response
}

/// An error of one record of a bulk write: its response, with the record's position added to
/// the body (`"index":12` or `"line":13`).
struct PositionedError: Error, HTTPResponseError, CustomStringConvertible {
    var position: BulkPosition
    var error: any Error

    private var response: ErrorResponse { ErrorResponse(for: self.error) }

    var status: HTTPResponse.Status { self.response.status }
    var headers: HTTPFields { self.response.headers }
    var logsCause: Bool { (self.error as? any HTTPResponseError)?.logsCause ?? false }

    var responseBody: [UInt8] {
        let body = self.response.body
        guard body.first == UInt8(ascii: "{"), body.count > 2 else { return body }
        return Array("{\"\(self.position.fieldName)\":\(self.position.number),".utf8) + body.dropFirst()
    }

    var description: String { "\(self.position): \(String(reflecting: self.error))" }
}
