import Crypto
import Foundation
import NIOCore
import SpoutCore
import SpoutHTTP

/// Reads a bulk body into its records' statements on a thread of its own (`spout-bulk-read`),
/// ahead of the database thread that runs them: reading, converting and binding the next
/// records overlaps running the last ones (SQLite runs them in the process, on the other core).
///
/// Contract:
/// - ``next()``, on the database thread, returns in the body's order each record's statement,
///   ``Item/pieceEnded`` after the records of each piece of the body, and nil at the body's end.
///   A refused record, a statement that cannot be made or a body that fails is thrown by
///   ``next()`` after every statement before it.
/// - Records of at most ``maximumPieces`` pieces wait to be taken: past that the reader stops
///   reading the body (so the socket's reads stop too) until the database side catches up.
/// - ``cancel()``: the database side gave up. The reader stops at its next record; its thread
///   ends once the body's next piece arrives or the body fails, taking nothing more.
/// - ``digest`` (the pieces digested after `head`, for an idempotency key) is whole once
///   ``next()`` returned nil.
///
/// `@unchecked Sendable`: every mutable field is read and written under `condition`; the
/// reader thread and the database thread share nothing else.
final class BulkRecordReader: @unchecked Sendable {
    enum Item {
        case statement(BoundStatement, InFlightRecord)
        /// A piece of the body ended: what was sent can go to the database.
        case pieceEnded
    }

    /// The database side cancelled: the reader stops.
    private struct Cancelled: Error {}

    static let maximumPieces = 4

    private let condition = NSCondition()
    private var items = CircularBuffer<Item>()
    private var piecesWaiting = 0
    private var end: Result<SHA256, any Error>?
    private var cancelled = false

    /// Starts reading `body` (nil: an empty one) with `decoder`, making each record's statement
    /// with `statement`; digests the pieces after `head` when `digesting`.
    init(
        body: RequestBodyStream?, decoder: BulkRecordDecoder, head: SHA256, digesting: Bool,
        statement: @escaping @Sendable (BulkRecord) throws -> (BoundStatement, InFlightRecord)
    ) {
        SpoutThread.start(named: "spout-bulk-read") { [self] in
            var decoder = decoder
            var digest = head
            let put = { (record: BulkRecord) throws in
                let (made, inFlight) = try statement(record)
                try self.put(.statement(made, inFlight))
            }
            do {
                while let piece = try body?.next() {
                    if digesting { digest.update(data: piece) }
                    try decoder.push(piece, put)
                    try self.put(.pieceEnded)
                }
                try decoder.finish(put)
                self.finish(.success(digest))
            } catch {
                self.finish(.failure(error))
            }
        }
    }

    /// The next item, waiting for it; nil once the body ended and every item was taken.
    func next() throws -> Item? {
        self.condition.lock()
        defer { self.condition.unlock() }
        while self.items.isEmpty && self.end == nil { self.condition.wait() }
        guard let item = self.items.popFirst() else {
            if case .failure(let error) = self.end { throw error }
            return nil
        }
        if case .pieceEnded = item {
            self.piecesWaiting -= 1
            self.condition.broadcast()
        }
        return item
    }

    /// The digest of the head and every piece; valid once ``next()`` returned nil.
    var digest: SHA256? {
        self.condition.lock()
        defer { self.condition.unlock() }
        guard case .success(let digest) = self.end else { return nil }
        return digest
    }

    func cancel() {
        self.condition.lock()
        self.cancelled = true
        self.condition.broadcast()
        self.condition.unlock()
    }

    private func put(_ item: Item) throws {
        self.condition.lock()
        defer { self.condition.unlock() }
        if case .pieceEnded = item {
            while self.piecesWaiting >= Self.maximumPieces && !self.cancelled { self.condition.wait() }
            self.piecesWaiting += 1
        }
        guard !self.cancelled else { throw Cancelled() }
        self.items.append(item)
        if self.items.count == 1 { self.condition.broadcast() }
    }

    private func finish(_ end: Result<SHA256, any Error>) {
        self.condition.lock()
        self.end = end
        self.condition.broadcast()
        self.condition.unlock()
    }
}
