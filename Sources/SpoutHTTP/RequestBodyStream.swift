import Foundation
import HTTPTypes
import SpoutCore

/// The body of a request whose route streams it (``Route/streamsBody``), handed to the handler
/// as it arrives from the socket: the event loop appends each piece, one consumer takes them
/// in order, on a thread that may block (a database thread running a bulk write).
///
/// Contract:
/// - Memory is bounded: once `highWatermark` bytes wait unread, the connection stops reading
///   from its socket (``pauseIfFull()``, asked by each read), and reads again when the
///   consumer has brought them down to `lowWatermark` (the `resume` closure, called once per
///   pause, off the event loop). What waits is then at most the high watermark plus one read.
/// - ``next()`` returns the pieces in order, then nil once the body has ended; it throws
///   ``Failure`` when the client went away before the end (``fail(_:)``), or when no byte
///   came for `patience`.
/// - Once ``next()`` has returned nil or thrown, it keeps doing so.
// @unchecked Sendable: every mutable field is read and written only while `condition` is
// locked (NSCondition is not marked Sendable, but it is a lock made for this use).
public final class RequestBodyStream: @unchecked Sendable {
    /// Why the body did not arrive whole.
    public enum Failure: Error, Sendable, Hashable, HTTPResponseError {
        /// The connection closed before the body's end.
        case clientGone
        /// No byte arrived for this long.
        case timedOut(Duration)

        public var status: HTTPResponse.Status {
            switch self {
            case .clientGone: .badRequest  // never sent: the client is gone
            case .timedOut: .requestTimeout
            }
        }

        public var responseBody: [UInt8] {
            switch self {
            case .clientGone: ErrorResponse(status: .badRequest, message: "the connection closed before the request body ended").body
            case .timedOut(let patience):
                ErrorResponse(status: .requestTimeout, message: "request body timeout: no byte for \(patience.components.seconds) s").body
            }
        }
    }

    private enum End {
        case finished
        case failed(Failure)
    }

    private let condition = NSCondition()
    private var pieces: [[UInt8]] = []
    private var head = 0
    private var buffered = 0
    private var end: End?
    private var paused = false
    private let highWatermark: Int
    private let lowWatermark: Int
    private let patience: Duration
    private let resume: @Sendable () -> Void

    /// - Parameters:
    ///   - highWatermark: Bytes waiting unread at which reading from the socket stops.
    ///   - lowWatermark: Bytes waiting unread at or below which it starts again.
    ///   - patience: How long ``next()`` waits for the next bytes before it throws
    ///     ``Failure/timedOut(_:)``.
    ///   - resume: Asks the connection to read again (called without the lock held, once for
    ///     each pause).
    public init(highWatermark: Int = 256 * 1024, lowWatermark: Int = 64 * 1024, patience: Duration, resume: @escaping @Sendable () -> Void) {
        self.highWatermark = highWatermark
        self.lowWatermark = min(lowWatermark, highWatermark)
        self.patience = patience
        self.resume = resume
    }

    // MARK: The connection's side

    /// Appends the next piece of the body (ignored after the end).
    func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        self.condition.lock()
        defer { self.condition.unlock() }
        guard self.end == nil else { return }
        self.pieces.append(bytes)
        self.buffered += bytes.count
        self.condition.signal()
    }

    /// The body has ended.
    func finish() {
        self.close(.finished)
    }

    /// The body will not end: the consumer's ``next()`` throws `failure` once it has taken
    /// what arrived before.
    func fail(_ failure: Failure) {
        self.close(.failed(failure))
    }

    private func close(_ end: End) {
        self.condition.lock()
        defer { self.condition.unlock() }
        guard self.end == nil else { return }
        self.end = end
        self.condition.signal()
    }

    /// Whether the connection must stop reading now: as many bytes as the high watermark
    /// wait unread. True marks the stream paused; the consumer then calls `resume` once it has
    /// taken enough.
    func pauseIfFull() -> Bool {
        self.condition.lock()
        defer { self.condition.unlock() }
        guard self.end == nil, self.buffered >= self.highWatermark else { return false }
        self.paused = true
        return true
    }

    // MARK: The consumer's side

    /// The next piece of the body, waiting for it (blocking the calling thread); nil once the
    /// body has ended.
    public func next() throws(Failure) -> [UInt8]? {
        self.condition.lock()
        var resumes = false
        defer {
            self.condition.unlock()
            if resumes { self.resume() }
        }
        let deadline = Date.now.addingTimeInterval(Double(self.patience.wholeNanoseconds) / 1e9)
        while self.head == self.pieces.count {
            switch self.end {
            case .finished?: return nil
            case .failed(let failure)?: throw failure
            case nil: break
            }
            if !self.condition.wait(until: deadline) && self.head == self.pieces.count && self.end == nil {
                self.end = .failed(.timedOut(self.patience))
            }
        }
        let piece = self.pieces[self.head]
        self.pieces[self.head] = []
        self.head += 1
        if self.head == self.pieces.count {
            self.pieces.removeAll(keepingCapacity: true)
            self.head = 0
        }
        self.buffered -= piece.count
        if self.paused && self.buffered <= self.lowWatermark {
            self.paused = false
            resumes = true
        }
        return piece
    }
}
