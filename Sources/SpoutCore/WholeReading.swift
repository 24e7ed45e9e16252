import Synchronization

/// A connection whose driver reads some results whole its own way, without holding one of the
/// database's threads while the database works (PostgreSQL: the parent statement and its
/// attachments' statements pipelined, answers read by the driver's I/O thread). What it
/// cannot read that way, the database's threads read (``DatabaseSession/readWhole(_:shape:format:roundTrips:)``
/// decides).
///
/// Contract:
/// - ``canReadWithoutThread(readOnly:statementTimeout:)`` is cheap and never blocks: true when
///   a read may start now with no setup round trip (the connection is open, idle, outside a
///   transaction, already read-only or writable as asked and, unless `statementTimeout` is
///   nil, already has that statement timeout in milliseconds, 0 for none).
/// - ``readWhole(_:shape:format:dateFormat:session:roundTrips:)`` returns nil at once when it
///   has no way of its own for the stream (nothing was sent). Otherwise it runs the stream's
///   statements with `session`'s role and claims, local to each implicit transaction, and
///   returns the encoded body; until it returns, only ``DatabaseConnection/cancel()`` may touch
///   the connection, which is idle again afterwards. It notes each round trip in `roundTrips`.
public protocol WholeReadingConnection: DatabaseConnection {
    func canReadWithoutThread(readOnly: Bool, statementTimeout milliseconds: Int?) -> Bool

    func readWhole(
        _ stream: RowStream, shape: ResultShape, format: OutputFormat, dateFormat: DateFormat, session: RequestSession?,
        roundTrips: RoundTripLog?
    ) async throws -> WholeRead?
}

/// A result read whole and encoded (``DatabaseSession/readWhole(_:shape:format:roundTrips:)``).
public struct WholeRead: Sendable {
    public var body: [UInt8]
    public var outcome: StreamOutcome
    /// How long reading took; with ``encode``, reading alone (the rows were held, then encoded).
    public var database: Duration
    /// How long encoding took when it followed reading; nil when the two interleaved (the
    /// threads' path).
    public var encode: Duration?

    public init(body: [UInt8], outcome: StreamOutcome, database: Duration, encode: Duration?) {
        self.body = body
        self.outcome = outcome
        self.database = database
        self.encode = encode
    }
}

/// The round trips of a read that pipelines its statements: how many statements the first
/// sent, and when each ended with how many the next sends. Written by the driver's thread,
/// read once the read is over (for trace spans).
public final class RoundTripLog: Sendable {
    private let state = Mutex<(first: Int?, marks: [(end: ContinuousClock.Instant, next: Int)])>((nil, []))
    private let sharedConnection = Atomic<Bool>(false)

    public init() {}

    /// The read went on a shared connection (``SharedReadingConnection``), behind other
    /// requests' reads.
    public func markShared() {
        self.sharedConnection.store(true, ordering: .relaxed)
    }

    /// Whether ``markShared()`` was called.
    public var isShared: Bool { self.sharedConnection.load(ordering: .relaxed) }

    /// The first round trip starts, sending `statements`.
    public func started(statements: Int) {
        self.state.withLock { $0.first = statements }
    }

    /// A round trip ended now; the next one sends `next` statements (0: none follows).
    public func ended(next: Int) {
        let now = ContinuousClock.now
        self.state.withLock { $0.marks.append((now, next)) }
    }

    /// The statements the first round trip sent; nil when the read did not pipeline.
    public var first: Int? { self.state.withLock { $0.first } }

    /// Each round trip's end and the size of the one after it, in order.
    public var marks: [(end: ContinuousClock.Instant, next: Int)] { self.state.withLock { $0.marks } }
}
