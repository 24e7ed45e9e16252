import Foundation
import HTTPTypes

/// Writes an app makes offline, kept in an SQLite file until the server has applied them
/// (docs/client.md, Write queue).
///
/// ```swift
/// let queue = try await client.writeQueue(directory: folder)
/// try await queue.enqueue(.post, path: "/pets/Bowser", body: .form([URLQueryItem(name: "species", value: "wolf")]), ifMatch: etag)
/// try await queue.send()          // when the network is back: applied in order, each once
/// ```
///
/// Contract:
/// - ``enqueue(_:path:query:body:ifMatch:)`` stores the write, with an `Idempotency-Key` of
///   its own, before it returns: it survives a restart of the app.
/// - ``send()`` sends the queued writes oldest first, one at a time, each with its key (and
///   its `If-Match`). A write the server applied leaves the queue. A write with no answer
///   (offline, a timeout, a connection lost before the whole answer) stays, with the ones
///   after it, and ``send()`` throws: sent again later under the same key, a write the server
///   did apply gets its first answer back (`Idempotent-Replayed: true`) and is not applied
///   twice. A `5xx` stays queued too.
/// - A `412` (the row changed since the `ETag` of `ifMatch`) leaves the queue and throws
///   ``SpoutWriteError/conflict(_:current:)`` with the current row; any other `4xx` leaves it
///   and throws ``SpoutWriteError/rejected(_:_:)``: sending it again would not change the
///   answer. The writes after it stay queued for the next ``send()``.
/// - One queue per file: ``SpoutClient/writeQueue(directory:account:)`` names the file after
///   the server and the caller, and a ``send()`` whose credentials have become another
///   identity's throws instead of sending one user's writes as another's.
/// - The `sqlite3` handle is confined to a serial dispatch queue, as a ``SpoutSyncStore``'s.
///   Concurrent ``send()`` calls share one pass.
public actor SpoutWriteQueue {
    /// The queue's SQLite file.
    public nonisolated let fileURL: URL
    private let client: SpoutClient
    private let owner: LocalFileOwner
    private let file: SQLiteFile
    private var running: Task<[SpoutReply], any Error>?

    static let schema = """
        CREATE TABLE IF NOT EXISTS spout_write_queue (
            position INTEGER PRIMARY KEY, idempotency_key TEXT NOT NULL UNIQUE, method TEXT NOT NULL,
            path TEXT NOT NULL, query BLOB NOT NULL, content_type TEXT, body BLOB, if_match TEXT, queued_at REAL NOT NULL);
        """

    init(client: SpoutClient, owner: LocalFileOwner, file: SQLiteFile) {
        self.client = client
        self.owner = owner
        self.file = file
        self.fileURL = URL(fileURLWithPath: file.path)
    }

    /// Adds a write at the end of the queue and stores it; sends nothing.
    /// - Parameter ifMatch: the `ETag` of the row the write was made against (from
    ///   ``SpoutObject/headers`` of its GET, or a previous write's reply): the server applies
    ///   the write only if the row is still that version.
    @discardableResult
    public func enqueue(
        _ method: HTTPRequest.Method, path: String, query: [URLQueryItem] = [], body: SpoutRequestBody? = nil, ifMatch: String? = nil
    ) async throws -> SpoutQueuedWrite {
        let write = SpoutQueuedWrite(
            idempotencyKey: UUID().uuidString.lowercased(), method: method, path: path, query: query, body: body, ifMatch: ifMatch,
            queuedAt: Date())
        let query = try JSONEncoder().encode(query.map { StoredQueryItem(name: $0.name, value: $0.value) })
        try await self.file.run { connection in
            try connection.query(
                """
                INSERT INTO spout_write_queue (idempotency_key, method, path, query, content_type, body, if_match, queued_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(write.idempotencyKey), .text(write.method.rawValue), .text(write.path), .blob([UInt8](query)),
                    write.body.map { .text($0.contentType) } ?? .null, write.body.map { .blob($0.bytes) } ?? .null,
                    write.ifMatch.map { .text($0) } ?? .null, .real(write.queuedAt.timeIntervalSince1970),
                ])
        }
        return write
    }

    /// The writes not applied yet, oldest first.
    public func pending() async throws -> [SpoutQueuedWrite] {
        try await self.file.run { connection in
            var writes: [SpoutQueuedWrite] = []
            try connection.query(
                "SELECT idempotency_key, method, path, query, content_type, body, if_match, queued_at FROM spout_write_queue ORDER BY position"
            ) { row in
                writes.append(try Self.write(row))
            }
            return writes
        }
    }

    /// A row of `spout_write_queue` as ``pending()`` selects it.
    private static func write(_ row: SQLiteFile.Row) throws -> SpoutQueuedWrite {
        guard let key = row.text(0), let methodName = row.text(1), let method = HTTPRequest.Method(methodName), let path = row.text(2),
            let pairs = try? JSONDecoder().decode([StoredQueryItem].self, from: Data(row.blob(3)))
        else { throw SpoutClientError.storeFailed("a queued write of \(row.text(2) ?? "?") cannot be read") }
        return SpoutQueuedWrite(
            idempotencyKey: key, method: method, path: path, query: pairs.map { URLQueryItem(name: $0.name, value: $0.value) },
            body: row.text(4).map { SpoutRequestBody(contentType: $0, bytes: row.blob(5)) }, ifMatch: row.text(6),
            queuedAt: Date(timeIntervalSince1970: row.real(7)))
    }

    /// A query item as the file keeps it.
    private struct StoredQueryItem: Codable {
        var name: String
        var value: String?
    }

    /// Sends the queued writes in order until none is left; returns the replies of those
    /// applied by this call, in order. Throws at the first write that did not apply (see the
    /// type's contract). Writes enqueued while it runs go out with the next call.
    @discardableResult
    public func send() async throws -> [SpoutReply] {
        if let running = self.running { return try await running.value }
        let task = Task { try await self.sendAll() }
        self.running = task
        defer { self.running = nil }
        return try await task.value
    }

    private func sendAll() async throws -> [SpoutReply] {
        var replies: [SpoutReply] = []
        for write in try await self.pending() {
            let url = try RequestTarget.url(base: self.client.baseURL, path: write.path, query: write.query)
            var headers = try await self.client.headers(renewingToken: false)
            try self.owner.check(headers)
            headers[.idempotencyKey] = "\"" + write.idempotencyKey + "\""
            if let tag = write.ifMatch { headers[.ifMatch] = tag }
            let response = try await self.client.performWrite(write.method, url: url, body: write.body, headers: headers)
            if response.status >= 500 { throw SpoutClientError.server(await ErrorBodyDecoder.error(from: response)) }
            if response.status == 412 {
                let current = try await self.client.reply(response, url: url)
                try await self.remove(write)
                throw SpoutWriteError.conflict(write, current: current)
            }
            if response.status >= 400 {
                let error = await ErrorBodyDecoder.error(from: response)
                try await self.remove(write)
                throw SpoutWriteError.rejected(write, error)
            }
            // The whole answer first: a write whose answer was cut short stays queued, and
            // its replay gets the stored answer.
            replies.append(try await self.client.reply(response, url: url))
            try await self.remove(write)
        }
        return replies
    }

    private func remove(_ write: SpoutQueuedWrite) async throws {
        try await self.file.run { connection in
            try connection.query("DELETE FROM spout_write_queue WHERE idempotency_key = ?", [.text(write.idempotencyKey)])
        }
    }
}

/// A write of a ``SpoutWriteQueue``.
public struct SpoutQueuedWrite: Sendable, Equatable {
    /// The `Idempotency-Key` it is sent with, every time (a UUID).
    public var idempotencyKey: String
    public var method: HTTPRequest.Method
    public var path: String
    public var query: [URLQueryItem]
    public var body: SpoutRequestBody?
    /// The `If-Match` it is sent with.
    public var ifMatch: String?
    public var queuedAt: Date

    public static func == (lhs: SpoutQueuedWrite, rhs: SpoutQueuedWrite) -> Bool {
        lhs.idempotencyKey == rhs.idempotencyKey
    }
}

/// A queued write the server refused; it left the queue (``SpoutWriteQueue/send()``).
public enum SpoutWriteError: Error, Sendable, CustomStringConvertible {
    /// `412 Precondition Failed`: the row is no longer the version of the write's `If-Match`.
    /// `current` is the server's answer: the current row as its GET gives it
    /// (`current.decode(Pet.self)`) with its `ETag` (`current.headers[.eTag]`), to show the
    /// conflict and, if the user chooses, queue the write again with that tag. For a row that
    /// is gone, its body is the error.
    case conflict(SpoutQueuedWrite, current: SpoutReply)
    /// Another `4xx` (a parameter refused, a `404`, a `409`): sending it again would not help.
    case rejected(SpoutQueuedWrite, SpoutServerError)

    public var description: String {
        switch self {
        case .conflict(let write, _): return "conflict: \(write.method.rawValue) \(write.path) was made against a version of the row that changed since (412)"
        case .rejected(let write, let error): return "\(write.method.rawValue) \(write.path) was refused: \(error.description)"
        }
    }
}

extension SpoutClient {
    /// Opens (creating it if missing) the write queue of the client's caller:
    /// ``SpoutWriteQueue``. The file is `directory/writes-<hash>.sqlite`, the hash of the
    /// server's URL and the caller, as for ``syncStore(path:query:key:directory:account:)``.
    public func writeQueue(directory: URL, account: String? = nil) async throws -> SpoutWriteQueue {
        let owner = try await LocalFileOwner(client: self, account: account)
        let file = try await SQLiteFile.open(
            path: owner.file(in: directory, prefix: "writes", parts: [self.baseURL.absoluteString]), schema: SpoutWriteQueue.schema)
        return SpoutWriteQueue(client: self, owner: owner, file: file)
    }
}
