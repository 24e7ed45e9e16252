/// A single-row response (an object or a value) planned as two batches of statements that a
/// connection can run without holding a thread (``EventDrivenConnection``): the parent
/// statement, then every attachment's statement for the parent row, sent together. The rows
/// are then encoded by ``write(_:as:shape:dateFormat:to:)`` exactly as
/// ``RowStream/write(as:shape:to:on:dateFormat:attachmentBatchSize:)`` would write them.
///
/// Only PostgreSQL streams whose attachments have no attachments of their own are planned
/// (``init(_:shape:format:dialect:)`` returns nil otherwise): deeper trees and SQLite go through
/// the cursor path. The parent row and the children are held in memory, as the cursor path
/// holds the children of a single parent.
public struct SingleRowPlan: Sendable {
    public let stream: RowStream
    /// The parent statement; only its first row is kept.
    public let parent: StatementBatch

    /// Nil when the stream is not a single-row PostgreSQL stream with flat attachments, or
    /// when it cannot be written in `format` (CSV with attachments: the cursor path reports it).
    /// - Throws: when the parent statement cannot be parsed or bound.
    public init?(_ stream: RowStream, shape: ResultShape, format: OutputFormat, dialect: SQLDialect) throws {
        guard shape != .array, dialect == .postgres, stream.attachments.allSatisfy({ $0.stream.attachments.isEmpty }),
            format != .csv || stream.attachments.isEmpty
        else { return nil }
        let parsed = try stream.statement(for: dialect)
        self.stream = stream
        self.parent = StatementBatch([BoundStatement(parsed, try parsed.bind(stream.arguments))], rowLimit: 1)
    }

    /// The batch to run after `results` (the results of the batches run so far): after the
    /// parent, every attachment's statement bound to the parent row; then none. Empty also
    /// when there is no parent row or no attachment.
    public func batch(after results: [[QueryResult]]) throws -> StatementBatch {
        guard results.count == 1, !self.stream.attachments.isEmpty, let parent = results[0].first,
            let row = parent.rows.first
        else {
            return StatementBatch([])
        }
        return StatementBatch(try AttachmentExecutor.singleParentStatements(
            self.stream.attachments, parent: BufferedRow(values: row, children: []), parentColumns: parent.columns,
            inherited: self.stream.arguments))
    }

    /// Encodes the parent row and its children, as read by the two batches, into `sink`.
    /// Throws ``RowStreamError/noRow`` when there is no parent row.
    /// - Returns: the number of top-level rows written (1).
    @discardableResult
    public func write(
        _ results: [[QueryResult]], as format: OutputFormat, shape: ResultShape, dateFormat: DateFormat,
        to sink: any ByteSink
    ) throws -> Int {
        guard let parent = results.first?.first else {
            throw DatabaseError(.other, message: "the parent statement returned no result")
        }
        // A parent row without one result per attachment fails in the executor.
        let executor = AttachmentExecutor(prefetched: results.count > 1 ? results[1] : [], dialect: .postgres)
        return try self.stream.encode(
            BufferedCursor(parent), executor: executor, format: format, shape: shape, dateFormat: dateFormat, sink: sink)
    }
}

/// A cursor over rows already read (a ``QueryResult``), for encoding them like a live cursor's.
public final class BufferedCursor: RowCursor {
    public let columns: [Column]
    private let rows: [[SQLValue]]
    private var position = -1

    public init(_ result: QueryResult) {
        self.columns = result.columns
        self.rows = result.rows
    }

    public func next() throws -> Bool {
        guard self.position + 1 < self.rows.count else {
            self.position = self.rows.count
            return false
        }
        self.position += 1
        return true
    }

    public func value(at index: Int) -> SQLValue {
        self.rows[self.position][index]
    }

    public func close() {}
}
