/// Statements sent one after another on one connection, in the caller's open transaction,
/// several in flight at a time: PostgreSQL runs one while the next are on their way (libpq
/// pipeline mode) instead of waiting a round trip for each; SQLite, whose statements run in
/// the process, runs each as it is sent (``SequentialWritePipeline``).
/// ``DatabaseConnection/withWritePipeline(window:keepsRows:answered:_:)`` makes one.
///
/// Contract:
/// - Statements are numbered from 0 in the order ``send(_:)`` takes them. Each one's answer
///   (``WriteAnswer``: the rows it changed and, when the pipeline keeps them, the rows it
///   returned) reaches the pipeline's `answered` once, in that order, on the calling thread,
///   during a ``send(_:)``, a ``flush()`` or the end of the pipeline.
/// - At most the pipeline's `window` statements are sent and not yet answered: ``send(_:)``
///   waits for answers while the window is full (or sooner, when the statements in flight
///   hold many bytes), so memory stays bounded.
/// - The first statement that fails ends the pipeline: ``WritePipelineFailure`` names it, and
///   every statement before it was answered first (so it is the oldest one not answered). An
///   error `answered` throws ends it the same way and is passed on as it is. No statement after
///   it runs; the caller's transaction must be rolled back (PostgreSQL has aborted it). Once
///   ended, ``send(_:)`` and ``flush()`` throw the same error again.
public protocol WritePipeline: AnyObject {
    /// Sends the next statement.
    func send(_ statement: BoundStatement) throws

    /// Hands the database what was sent and is still buffered, so that it works while the
    /// caller waits for its own input (a request body arriving from the network).
    func flush() throws
}

/// What one statement of a ``WritePipeline`` answered.
public struct WriteAnswer: Sendable {
    /// The rows it changed.
    public var changed: Int
    /// Every row it returned (an `INSERT … RETURNING`'s), when the pipeline keeps them
    /// (`keepsRows`) and the statement returns columns; nil otherwise.
    public var rows: QueryResult?

    public init(changed: Int, rows: QueryResult? = nil) {
        self.changed = changed
        self.rows = rows
    }
}

/// The first statement of a ``WritePipeline`` that failed: its number (from 0, in the order
/// sent) and the database's error.
public struct WritePipelineFailure: Error, CustomStringConvertible {
    public var statement: Int
    public var error: any Error

    public init(statement: Int, error: any Error) {
        self.statement = statement
        self.error = error
    }

    public var description: String { "statement \(self.statement) of the pipeline: \(String(reflecting: self.error))" }
}

/// A ``WritePipeline`` that runs each statement as it is sent
/// (``DatabaseConnection/execute(_:_:)``, or ``DatabaseConnection/executeReturning(_:_:)``
/// when it keeps rows) and answers it at once: the default, for a database whose statements
/// cost no round trip.
public final class SequentialWritePipeline: WritePipeline {
    private let connection: any DatabaseConnection
    private let keepsRows: Bool
    private let answered: (WriteAnswer) throws -> Void
    private var sent = 0
    private var failure: (any Error)?

    /// `answered` must not outlive the pipeline's use.
    public init(connection: any DatabaseConnection, keepsRows: Bool = false, answered: @escaping (WriteAnswer) throws -> Void) {
        self.connection = connection
        self.keepsRows = keepsRows
        self.answered = answered
    }

    public func send(_ statement: BoundStatement) throws {
        if let failure = self.failure { throw failure }
        let number = self.sent
        self.sent += 1
        let answer: WriteAnswer
        do {
            answer =
                self.keepsRows
                ? try self.connection.executeReturning(statement.sql, statement.parameters)
                : WriteAnswer(changed: try self.connection.execute(statement.sql, statement.parameters))
        } catch {
            self.failure = WritePipelineFailure(statement: number, error: error)
            throw self.failure!
        }
        do {
            try self.answered(answer)
        } catch {
            self.failure = error
            throw error
        }
    }

    public func flush() throws {
        if let failure = self.failure { throw failure }
    }
}
