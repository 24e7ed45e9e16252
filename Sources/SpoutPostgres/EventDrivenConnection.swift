import SpoutCore

/// Statements sent together, their results read whole (``EventDrivenConnection``).
public struct StatementBatch: Sendable {
    public var statements: [BoundStatement]
    /// Keep at most this many rows of each of `statements` (the rest are read and dropped);
    /// nil: all.
    public var rowLimit: Int?
    /// Statements sent in the same round trip after `statements`, in an implicit transaction
    /// of their own, read whole. Their results follow those of `statements` when every one of
    /// them succeeds; when one fails (or `statements` fail), the run goes on without them. For
    /// work whose inputs are guessed before `statements` answer, checked once they have.
    public var tentative: [BoundStatement]

    public init(_ statements: [BoundStatement], rowLimit: Int? = nil, tentative: [BoundStatement] = []) {
        self.statements = statements
        self.rowLimit = rowLimit
        self.tentative = tentative
    }
}

/// A connection that can run statements without holding a thread while it waits for the
/// database: it sends them, and an I/O thread of the driver's (an epoll loop shared by every
/// such connection) reads the answers as they arrive and calls back.
///
/// Contract (beyond ``DatabaseConnection``):
/// - ``canRunEventDriven(readOnly:statementTimeout:)`` is cheap and never blocks: true when
///   the connection is open, idle, outside a transaction, its read-only setting
///   (``DatabaseConnection/setReadOnly(_:)``) already is `readOnly`, and, unless
///   `statementTimeout` is nil, its statement timeout already is that many milliseconds (0:
///   none), so a run needs no setup round trip.
/// - ``runEventDriven(_:session:then:completion:)`` returns at once. From then until `completion` is
///   called, the connection belongs to the driver's I/O thread: the caller must not touch it
///   (except ``DatabaseConnection/cancel()``, which works as usual). `completion` is called
///   exactly once, after the connection is idle again: on the I/O thread, or on the calling
///   thread when the run ends before anything is sent.
/// - Each batch is one round trip, its tentative statements included (statements not yet
///   prepared on the connection are prepared in the same round trip). `next` runs on the I/O
///   thread with the results of every batch read so far, in order, and returns the next
///   batch; a batch without statements ends the run. Outside a transaction each batch runs in
///   an implicit transaction of its own; its tentative statements run after the others, in
///   another one unless nothing can be rolled back (a read-only session).
/// - With a `session` (``RequestSession``), every implicit transaction the run opens sets the
///   session's role and claims first, in the same round trip as the statements, local to that
///   transaction: they end with it, so no batch, and no later work on the connection, sees
///   another's. A failure to set them fails the run like a failing statement.
/// - When a statement fails, the rest of its batch is skipped, no later batch runs, and the
///   first error is passed to `completion`; the connection stays usable unless the error is
///   ``DatabaseError/Code/connectionLost``. An error thrown by `next` ends the run the same way.
///   A tentative statement that fails only leaves the tentative results out.
public protocol EventDrivenConnection: DatabaseConnection {
    func canRunEventDriven(readOnly: Bool, statementTimeout milliseconds: Int?) -> Bool

    func runEventDriven(
        _ first: StatementBatch,
        session: RequestSession?,
        then next: @escaping @Sendable (_ results: [[QueryResult]]) throws -> StatementBatch,
        completion: @escaping @Sendable (Result<[[QueryResult]], any Error>) -> Void
    )
}

extension EventDrivenConnection {
    /// ``runEventDriven(_:session:then:completion:)`` awaited: the results of every batch, in
    /// order.
    public func runEventDriven(
        _ first: StatementBatch, session: RequestSession?,
        then next: @escaping @Sendable (_ results: [[QueryResult]]) throws -> StatementBatch
    ) async throws -> [[QueryResult]] {
        try await withCheckedThrowingContinuation { continuation in
            self.runEventDriven(first, session: session, then: next) { result in continuation.resume(with: result) }
        }
    }
}
