/// The answer a write gave, kept for its `Idempotency-Key`: what a replay of the same request
/// gets instead of applying the write again.
public struct StoredAnswer: Sendable, Hashable {
    public var status: Int
    /// The response's own header fields, `name: value` each, in order.
    public var fields: [String]
    public var body: [UInt8]

    public init(status: Int, fields: [String], body: [UInt8]) {
        self.status = status
        self.fields = fields
        self.body = body
    }
}

/// What claiming an idempotency key in a write's transaction found.
public enum IdempotencyClaim: Sendable, Hashable {
    /// The key is new (or its record expired): this request applies the write, and stores its
    /// answer in the same transaction.
    case claimed
    /// The same request was applied before: its answer.
    case answered(StoredAnswer)
    /// The key was used with another request.
    case otherRequest
}

/// Where writes' answers are kept by idempotency key: a table `spout_idempotency` in the
/// database the writes go to, written in each write's own transaction, so a write and its
/// answer commit together or not at all. Each driver supplies its SQL
/// (``idempotencyStatements``); the operations are written once, here.
///
/// Contract:
/// - A key is claimed in the write's transaction: first
///   (``claimIdempotencyKey(scope:key:requestHash:retentionSeconds:)``, a bulk write's, whose
///   answer ``commitIdempotentAnswer(scope:key:answer:)`` stores with the commit) or last, with
///   the answer and the commit (``keepIdempotentAnswer(scope:key:requestHash:retentionSeconds:answer:)``,
///   a single write's). Two transactions claiming one key at once apply once: PostgreSQL
///   makes the second wait at the key's unique index until the first ends (then it finds the
///   answer, or claims the key when the first rolled back); SQLite runs one write transaction
///   at a time.
/// - A record older than the retention is treated as absent and replaced: a claim replaces it,
///   a lookup deletes it, and a keep meets it as a key that has a record (the caller looks up,
///   which deletes it, and runs the write again).
public protocol IdempotencyStore: DatabaseConnection {
    var idempotencyStatements: IdempotencyStatements { get throws }
}

/// A driver's statements for ``IdempotencyStore``, each named by what it binds and does.
public struct IdempotencyStatements: Sendable {
    /// → one row, one value: true or non-zero when the table exists.
    public var tableExists: ParsedSQL
    /// Creates the table where missing (several processes may run it at once).
    public var createScript: String
    /// `:scope`, `:key`, `:seconds` → deletes the key's record when older than that.
    public var deleteExpired: ParsedSQL
    /// `:scope`, `:key`, `:hash`, `:seconds` → inserts the key's record unless there is one, or
    /// replaces one older than that (1 row: claimed). One statement: a claim costs one round trip.
    public var claim: ParsedSQL
    /// `:scope`, `:key`, `:hash`, `:status`, `:fields`, `:body` → inserts the key's record
    /// with its answer; a unique violation when the key has a record.
    public var keep: ParsedSQL
    /// `:scope`, `:key` → request_hash, status, fields, body.
    public var find: ParsedSQL
    /// `:scope`, `:key`, `:status`, `:fields`, `:body` → stores the answer.
    public var answer: ParsedSQL
    /// `:seconds` → deletes every record older than that.
    public var prune: ParsedSQL

    public init(
        tableExists: ParsedSQL, createScript: String, deleteExpired: ParsedSQL, claim: ParsedSQL, keep: ParsedSQL, find: ParsedSQL,
        answer: ParsedSQL, prune: ParsedSQL
    ) {
        self.tableExists = tableExists
        self.createScript = createScript
        self.deleteExpired = deleteExpired
        self.claim = claim
        self.keep = keep
        self.find = find
        self.answer = answer
        self.prune = prune
    }
}

extension IdempotencyStore {
    /// Creates the table unless it exists, in a transaction of its own. Throws when the role may
    /// not create it (the database's message says why).
    public func prepareIdempotency() throws {
        let statements = try self.idempotencyStatements
        let found = try self.queryAll([BoundStatement(statements.tableExists, [])])
        switch found.first?.rows.first?.first {
        case .bool(true)?: return
        case .integer(let count)? where count > 0: return
        default: break
        }
        try self.runRequest(statementTimeout: nil, transaction: .always(readOnly: false)) { try self.executeScript(statements.createScript) }
    }

    /// Claims `key` for a request of `scope` (the endpoint and who asks) whose content digests
    /// to `requestHash`; see the protocol's contract. Call it in the write's transaction.
    public func claimIdempotencyKey(scope: String, key: String, requestHash: String, retentionSeconds: Int) throws -> IdempotencyClaim {
        let statements = try self.idempotencyStatements
        let claim: [String: SQLValue] = [
            "scope": .text(scope), "key": .text(key), "hash": .text(requestHash), "seconds": .integer(Int64(retentionSeconds)),
        ]
        if try self.execute(statements.claim, try statements.claim.bind(claim)) == 1 { return .claimed }
        guard let record = try self.idempotencyRecord(scope: scope, key: key) else { return .claimed }
        guard record.requestHash == requestHash else { return .otherRequest }
        guard let answer = record.answer else {
            throw DatabaseError(.busy, message: "the idempotency key's first request has not answered")
        }
        return .answered(answer)
    }

    /// What is kept for `key` of `scope`, without claiming it: the digest of the request that
    /// claimed it and its answer (nil while that request has not answered); nil when nothing is
    /// kept, or only a record older than `retentionSeconds` (which is deleted). For a write that
    /// can only digest its request once it has applied it (a bulk write's streamed body): it
    /// looks first, and claims after.
    public func findIdempotencyKey(scope: String, key: String, retentionSeconds: Int) throws -> (requestHash: String, answer: StoredAnswer?)? {
        try self.deleteExpiredIdempotencyKey(scope: scope, key: key, retentionSeconds: retentionSeconds)
        return try self.idempotencyRecord(scope: scope, key: key)
    }

    /// Deletes the record of `key` of `scope` when it is older than `retentionSeconds`; true
    /// when there was one.
    @discardableResult
    public func deleteExpiredIdempotencyKey(scope: String, key: String, retentionSeconds: Int) throws -> Bool {
        let statement = try self.idempotencyStatements.deleteExpired
        let expired: [String: SQLValue] = ["scope": .text(scope), "key": .text(key), "seconds": .integer(Int64(retentionSeconds))]
        return try self.execute(statement, try statement.bind(expired)) > 0
    }

    /// The arguments that store `answer` for `key` of `scope`: `:scope`, `:key`, `:status`,
    /// `:fields` (one a line), `:body`.
    private static func arguments(scope: String, key: String, answer: StoredAnswer) -> [String: SQLValue] {
        [
            "scope": .text(scope), "key": .text(key), "status": .integer(Int64(answer.status)),
            "fields": .text(answer.fields.joined(separator: "\n")), "body": .bytes(answer.body),
        ]
    }

    /// What is kept for `key` of `scope`, expired or not: the digest of the request that
    /// claimed it and its answer (nil while that request has not answered); nil when nothing is.
    public func idempotencyRecord(scope: String, key: String) throws -> (requestHash: String, answer: StoredAnswer?)? {
        let find = try self.idempotencyStatements.find
        let rows = try self.queryAll([BoundStatement(find, try find.bind(["scope": .text(scope), "key": .text(key)]))]).first?.rows ?? []
        guard let row = rows.first, row.count == 4, case .text(let hash) = row[0] else { return nil }
        guard case .integer(let status) = row[1] else { return (hash, nil) }
        let fields: [String] = if case .text(let text) = row[2] { text.split(separator: "\n").map(String.init) } else { [] }
        let body: [UInt8] =
            switch row[3] {
            case .bytes(let bytes): bytes
            case .text(let text): Array(text.utf8)
            default: []
            }
        return (hash, StoredAnswer(status: Int(status), fields: fields, body: body))
    }

    /// Stores `answer` for the key this transaction claimed, as the transaction's last
    /// statement, and commits (``DatabaseConnection/commit(after:)``: on PostgreSQL one round
    /// trip for both).
    public func commitIdempotentAnswer(scope: String, key: String, answer: StoredAnswer) throws {
        let statement = try self.idempotencyStatements.answer
        let arguments = Self.arguments(scope: scope, key: key, answer: answer)
        try self.commit(after: BoundStatement(statement, try statement.bind(arguments)))
    }

    /// Keeps `answer` for `key` of `scope`, claimed only now, as the transaction's last
    /// statement, and commits (``DatabaseConnection/commit(after:)``: on PostgreSQL one round
    /// trip for both). When the key has a record (another request under it committed first, on
    /// PostgreSQL after waiting at the key's unique index for it; or a record older than the
    /// retention), the insert's unique violation is thrown and nothing commits: the caller
    /// rolls back, deletes an expired record (``deleteExpiredIdempotencyKey(scope:key:retentionSeconds:)``)
    /// and looks the key up (``idempotencyRecord(scope:key:)``), and runs the write again when
    /// the record had expired.
    /// The expired record is not deleted here: that would cost every keyed write a statement
    /// for what happens only to a key reused after its retention.
    public func keepIdempotentAnswer(scope: String, key: String, requestHash: String, answer: StoredAnswer) throws {
        let keep = try self.idempotencyStatements.keep
        var kept = Self.arguments(scope: scope, key: key, answer: answer)
        kept["hash"] = .text(requestHash)
        try self.commit(after: BoundStatement(keep, try keep.bind(kept)))
    }

    /// Deletes every record older than `seconds`; returns how many.
    public func pruneIdempotencyKeys(olderThan seconds: Int) throws -> Int {
        let statement = try self.idempotencyStatements.prune
        return try self.execute(statement, try statement.bind(["seconds": .integer(Int64(seconds))]))
    }
}
