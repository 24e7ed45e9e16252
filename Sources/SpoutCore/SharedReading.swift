/// A driver whose connections can each carry the whole reads of many requests at once
/// (PostgreSQL: each request's statements pipelined behind those of the requests before it, in
/// an implicit transaction of its own). ``SharedReaders`` keeps a few such connections per
/// database and lends them to read-only work that reads a result whole.
///
/// Contract:
/// - ``openSharedReader(statementTimeout:statistics:)`` blocks while it connects (call it on
///   the database's threads). It returns nil when this driver's connections cannot be shared
///   (behind a transaction pooler, or without the driver's event loop): the work then leases
///   connections as usual.
/// - The connection it returns is read-only outside explicit transactions, and runs each
///   statement under `statementTimeout` milliseconds (0: none).
public protocol SharedReadingDriver: DatabaseDriver {
    func openSharedReader(statementTimeout milliseconds: Int, statistics: QueryStatistics) throws -> (any SharedReadingConnection)?
}

/// A connection that reads results whole for many requests at once, each request's
/// statements in a transaction of its own (see ``SharedReadingDriver``).
///
/// Contract:
/// - Every method may be called from any thread at any time, and never blocks on the
///   database: a read sends its statements and suspends until they are answered.
/// - ``readWhole(_:shape:format:dateFormat:session:roundTrips:)`` returns nil at once when it
///   has no way of its own for the stream (nothing was sent: read it on a lease instead).
///   Otherwise it runs the stream's statements with `session`'s role, claims and trace
///   context, set for that request's own transaction only, and returns the encoded body.
///   A read that fails (a constraint, a bad value, its statement timeout) fails alone: the
///   reads before and after it on the connection are answered as if it had not been there.
/// - Cancelling the calling task ends the read at once with
///   ``DatabaseError/Code/cancelled`` and leaves the statements to finish on the server, their
///   answers dropped: a cancel request would stop whichever request's statement runs then.
/// - When the connection is lost, every read in flight fails with
///   ``DatabaseError/Code/connectionLost`` (or ``DatabaseError/Code/notAnswering``), and
///   ``isBroken`` turns true for good.
/// - ``load`` is how many reads are in flight and how long the oldest has been; ``close()``
///   fails the reads in flight and closes the connection, perhaps on another thread later;
///   ``closed()`` returns once the connection is closed (by ``close()`` or as it broke).
public protocol SharedReadingConnection: Sendable {
    var load: SharedReaderLoad { get }
    var isBroken: Bool { get }

    func readWhole(
        _ stream: RowStream, shape: ResultShape, format: OutputFormat, dateFormat: DateFormat, session: RequestSession?,
        roundTrips: RoundTripLog?
    ) async throws -> WholeRead?

    func close()
    func closed() async
}

/// The reads in flight on a ``SharedReadingConnection``.
public struct SharedReaderLoad: Sendable, Hashable {
    /// Reads asked for and not yet answered.
    public var inFlight: Int
    /// How long the oldest read sent has waited for its answer; nil when none is sent.
    public var oldestWaited: Duration?

    public init(inFlight: Int, oldestWaited: Duration?) {
        self.inFlight = inFlight
        self.oldestWaited = oldestWaited
    }
}
