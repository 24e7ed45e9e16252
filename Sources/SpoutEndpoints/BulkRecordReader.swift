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
/// - With a `stallBudget`, while the body can be read again from its start
///   (``BulkBodySource/canRestart``): once ``next()`` has waited that long in all for records
///   while the reader waited for the body (a slow client, not a busy reader), it throws
///   ``BulkBodyStalled`` and the reader is *detached*: it reads the rest of the body (which
///   the source keeps) and still makes each record's statement, so that a refused record
///   fails it, but hands nothing over; ``finished()`` waits for its end. ``cancel()`` does not stop a detached reader. When `mayDetach` refuses, ``next()``
///   throws ``BulkBodiesKeptAtCapacity`` instead and the reader is not detached.
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

    /// The longest wait of ``next()`` counted against the stall budget at once.
    private static let stallSlice = Duration.milliseconds(50)

    private let condition = NSCondition()
    private var items = CircularBuffer<Item>()
    private var piecesWaiting = 0
    private var end: Result<SHA256, any Error>?
    private var cancelled = false
    private var detached = false
    /// How long ``next()`` may wait for records in all before the reader is detached.
    private let stallBudget: Duration?
    /// How long ``next()`` has waited for records while the reader waited for the body.
    private var waited = Duration.zero
    /// Whether the reader is waiting for the body's next piece.
    private var awaitsBody = false
    private let source: any BulkBodySource
    private let mayDetach: @Sendable () -> Bool
    private let ended = AsyncOneShotEvent()

    /// Starts reading `body` with `decoder`, making each record's statement with `statement`;
    /// digests the pieces after `head` when `digesting`. `stallBudget`: how long ``next()``
    /// waits for records in all before the reader is detached (nil: never); `mayDetach`, asked
    /// then, may refuse (too many detached readers).
    init(
        body: any BulkBodySource, decoder: BulkRecordDecoder, head: SHA256, digesting: Bool, stallBudget: Duration? = nil,
        mayDetach: @escaping @Sendable () -> Bool = { true },
        statement: @escaping @Sendable (BulkRecord) throws -> (BoundStatement, InFlightRecord)
    ) {
        self.source = body
        self.mayDetach = mayDetach
        self.stallBudget = stallBudget
        SpoutThread.start(named: "spout-bulk-read") { [self] in
            var decoder = decoder
            var digest = head
            let put = { (record: BulkRecord) throws in
                let (made, inFlight) = try statement(record)
                try self.put(.statement(made, inFlight))
            }
            do {
                while let piece = try self.awaitingBody({ try body.next() }) {
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
    /// Throws ``BulkBodyStalled`` when the stall budget is spent (see above).
    func next() throws -> Item? {
        self.condition.lock()
        defer { self.condition.unlock() }
        while self.items.isEmpty && self.end == nil {
            guard let budget = self.stallBudget, self.source.canRestart else {
                self.condition.wait()
                continue
            }
            let left = budget - self.waited
            guard left > .zero else {
                guard self.mayDetach() else { throw BulkBodiesKeptAtCapacity() }
                self.detached = true
                self.items.removeAll()
                self.piecesWaiting = 0
                self.condition.broadcast()
                throw BulkBodyStalled(reader: self)
            }
            // In slices, so that only the time the body kept the reader waiting counts.
            let slice = min(left, Self.stallSlice)
            let started = ContinuousClock.now
            _ = self.condition.wait(until: Date.now.addingTimeInterval(Double(slice.wholeNanoseconds) / 1e9))
            if self.awaitsBody { self.waited += ContinuousClock.now - started }
        }
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

    /// Runs `read` (a read of the body) marked as waiting for the body.
    private func awaitingBody(_ read: () throws -> [UInt8]?) throws -> [UInt8]? {
        self.setAwaitsBody(true)
        defer { self.setAwaitsBody(false) }
        return try read()
    }

    private func setAwaitsBody(_ value: Bool) {
        self.condition.lock()
        self.awaitsBody = value
        self.condition.unlock()
    }

    /// Waits for a detached reader to reach the body's end; throws what ended it otherwise (a
    /// refused record, a body that failed).
    func finished() async throws {
        await self.ended.wait()
        if case .failure(let error) = self.outcome() { throw error }
    }

    /// How the reading ended, nil while it runs.
    private func outcome() -> Result<SHA256, any Error>? {
        self.condition.lock()
        defer { self.condition.unlock() }
        return self.end
    }

    func cancel() {
        self.condition.lock()
        self.cancelled = !self.detached
        self.condition.broadcast()
        self.condition.unlock()
    }

    private func put(_ item: Item) throws {
        self.condition.lock()
        defer { self.condition.unlock() }
        if case .pieceEnded = item {
            while self.piecesWaiting >= Self.maximumPieces && !self.cancelled && !self.detached { self.condition.wait() }
            self.piecesWaiting += 1
        }
        guard !self.cancelled else { throw Cancelled() }
        guard !self.detached else { return }
        self.items.append(item)
        if self.items.count == 1 { self.condition.broadcast() }
    }

    private func finish(_ end: Result<SHA256, any Error>) {
        self.condition.lock()
        self.end = end
        self.condition.broadcast()
        self.condition.unlock()
        self.ended.set()
    }
}

/// A bulk write's records stopped coming while its transaction waited for them (its reader's
/// stall budget is spent): the write gives the transaction up, and runs the records again
/// once ``reader`` has read the body whole (``BulkRecordReader/finished()``).
struct BulkBodyStalled: Error {
    let reader: BulkRecordReader
}
