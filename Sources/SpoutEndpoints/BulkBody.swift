import HTTPTypes
import SpoutHTTP
import Synchronization

/// Where a bulk write's records are read from: the pieces of its body, in order, on the
/// thread of its ``BulkRecordReader`` (one that may block).
protocol BulkBodySource: Sendable {
    /// The next piece of the body, waiting for it; nil once the body has ended.
    func next() throws -> [UInt8]?
    /// Whether the whole body can still be read again from the start once it has ended: a
    /// write that stops waiting for it may then run its records later (``BulkBodyTee``).
    var canRestart: Bool { get }
}

/// A bulk body as it arrives from the socket, kept as it is read in an unnamed temporary
/// file (``SpoutHTTP/SpooledBody``), so that the write can give its transaction up while the
/// client is slow and run the records again from the file once the body has ended.
///
/// Contract:
/// - ``next()`` returns the request's pieces as ``SpoutHTTP/RequestBodyStream/next()`` does,
///   after appending each to the file; at the body's end the file is finished and
///   ``whole`` holds it.
/// - The file keeps at most `limit` bytes. A body that passes it, or a file that cannot be
///   created or written (a full disk), stops being kept: ``canRestart`` turns false, the file
///   is dropped, and the pieces still come (the write then waits for the client as before).
///   Once ``mustKeep()`` was called, that is an error instead (``BulkBodyTooLargeToKeep``).
///
/// `@unchecked Sendable`: `kept` and `isFinished` change only on the reader's thread, in
/// ``next()``, and are read by other threads only after the reader has ended (``whole``);
/// the flags other threads read while it runs are atomic.
final class BulkBodyTee: BulkBodySource, @unchecked Sendable {
    private let body: RequestBodyStream?
    private let directory: String?
    private let limit: Int
    private var kept: SpooledBody?
    private var isFinished = false
    private let keeping = Atomic<Bool>(true)
    private let mustBeKept = Atomic<Bool>(false)

    /// - Parameters:
    ///   - body: The request's body (nil: an empty one).
    ///   - directory: Where the file is made (``SpoutHTTP/SpoolConfiguration/directory``).
    ///   - limit: The most bytes kept.
    init(body: RequestBodyStream?, directory: String?, limit: Int) {
        self.body = body
        self.directory = directory
        self.limit = limit
    }

    var canRestart: Bool { self.keeping.load(ordering: .acquiring) }

    /// From now on a body that cannot be kept fails the read (the write gave its transaction
    /// up and needs the whole body).
    func mustKeep() {
        self.mustBeKept.store(true, ordering: .releasing)
    }

    func next() throws -> [UInt8]? {
        guard let piece = try self.body?.next() else {
            if self.keeping.load(ordering: .relaxed) {
                do {
                    try self.file()?.finish(UnsafeRawBufferPointer(start: nil, count: 0))
                } catch {
                    try self.stopKeeping()
                }
            }
            self.isFinished = true
            return nil
        }
        guard self.keeping.load(ordering: .relaxed) else { return piece }
        do {
            guard (self.kept?.count ?? 0) + piece.count <= self.limit, let file = try self.file() else {
                try self.stopKeeping()
                return piece
            }
            try piece.withUnsafeBytes { try file.write($0) }
        } catch let tooLarge as BulkBodyTooLargeToKeep {
            throw tooLarge
        } catch {
            try self.stopKeeping()
        }
        return piece
    }

    /// The whole body, once ``next()`` has returned nil, when it was kept.
    var whole: SpooledBody? {
        self.isFinished && self.canRestart ? self.kept : nil
    }

    /// The file, made on the first piece.
    private func file() throws -> SpooledBody? {
        if let kept = self.kept { return kept }
        self.kept = try SpooledBody(directory: self.directory)
        return self.kept
    }

    private func stopKeeping() throws {
        self.keeping.store(false, ordering: .releasing)
        self.kept = nil
        if self.mustBeKept.load(ordering: .acquiring) { throw BulkBodyTooLargeToKeep(limit: self.limit) }
    }
}

/// A bulk body kept whole (``BulkBodyTee/whole``), read again from its file in pieces.
///
/// `@unchecked Sendable`: `offset` changes only in ``next()``, on the one reader's thread.
final class KeptBulkBody: BulkBodySource, @unchecked Sendable {
    private let body: SpooledBody
    private var offset = 0

    init(_ body: SpooledBody) {
        self.body = body
    }

    var canRestart: Bool { false }

    func next() throws -> [UInt8]? {
        guard self.offset < self.body.count else { return nil }
        let piece = try self.body.read(at: self.offset, count: min(SpooledBody.bufferSize, self.body.count - self.offset))
        self.offset += piece.count
        return piece
    }
}

/// A bulk body that came too slowly to keep the transaction waiting for it, and is too large
/// to take whole first (413): nothing was committed.
struct BulkBodyTooLargeToKeep: Error, HTTPResponseError {
    var limit: Int
    var status: HTTPResponse.Status { .contentTooLarge }
    var responseBody: [UInt8] {
        ErrorResponse(
            status: self.status,
            message: "this bulk body came too slowly to be applied as it arrived, and passes the \(self.limit) bytes "
                + "kept to apply it once whole: nothing was committed; send fewer records per request"
        ).body
    }
}

/// The stalled bulk bodies being kept at once (``BulkBodyTee``), each with its reading thread,
/// over every bulk endpoint: at most `maximum`.
final class BulkBodySlots: Sendable {
    private let maximum: Int
    private let taken = Atomic<Int>(0)

    init(maximum: Int) {
        self.maximum = maximum
    }

    /// Takes a slot; false when all are taken.
    @Sendable
    func take() -> Bool {
        var current = self.taken.load(ordering: .relaxed)
        while current < self.maximum {
            let (exchanged, original) = self.taken.compareExchange(
                expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Gives back a slot ``take()`` took.
    func give() {
        self.taken.subtract(1, ordering: .acquiringAndReleasing)
    }
}

/// A bulk body stalled while as many stalled bodies as are kept at once are (503): nothing
/// was committed; the client may send it again.
struct BulkBodiesKeptAtCapacity: Error, HTTPResponseError {
    var status: HTTPResponse.Status { .serviceUnavailable }
    var headers: HTTPFields { [.retryAfter: "1"] }
    var responseBody: [UInt8] {
        ErrorResponse(
            status: self.status,
            message: "too many slow bulk bodies are being taken at once: nothing was committed; send it again later, or faster"
        ).body
    }
}
