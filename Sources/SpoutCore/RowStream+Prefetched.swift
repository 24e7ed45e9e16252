/// What a driver needs to read a single-row result its own way (PostgreSQL pipelines the
/// parent statement and its attachments' statements, read whole) and still write the bytes
/// ``RowStream/write(as:shape:to:on:dateFormat:attachmentBatchSize:fetchSize:)`` writes.
extension RowStream {
    /// The first column index of each label in `columns`: where the attachments' statements
    /// find the parent values they bind by label.
    public static func labelIndex(_ columns: [Column]) -> [String: Int] {
        AttachmentExecutor.labelIndex(columns)
    }

    /// The statement of each attachment for one parent row, `values` under `columns`, as
    /// `strategy` sends a single parent's children together.
    public func childStatements(forParent values: [SQLValue], columns: [Column], strategy: any ChildQueryStrategy) throws -> [BoundStatement] {
        try AttachmentExecutor.singleParentStatements(
            self.attachments, parent: BufferedRow(values: values, children: []), parentColumns: columns,
            inherited: self.arguments, strategy: strategy)
    }

    /// Encodes `parent` (the parent statement's result, read whole) and `children` (one
    /// result per attachment, in order, made by `strategy` for its first row) into `sink`, in
    /// `format` and `shape`. Throws ``RowStreamError/noRow`` when the shape needs a row and
    /// `parent` has none.
    @discardableResult
    public func write(
        parent: QueryResult, children: [QueryResult], strategy: any ChildQueryStrategy, as format: OutputFormat,
        shape: ResultShape, dateFormat: DateFormat, to sink: any ByteSink
    ) throws -> StreamOutcome {
        let executor = AttachmentExecutor(prefetched: children, strategy: strategy)
        return try self.encode(BufferedCursor(parent), executor: executor, format: format, shape: shape, dateFormat: dateFormat, sink: sink)
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
