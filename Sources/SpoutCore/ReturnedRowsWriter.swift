/// The rows many statements returned (a bulk write's `INSERT … RETURNING`s), written as they
/// come as one JSON array of objects, each row exactly as a single write answers it.
///
/// Contract: ``append(_:)`` for each statement's rows, in order, then ``finish()`` once: the
/// sink gets `[` row `,` row … `]` (`[]` when no statement returned a row) in chunks
/// (``ByteSink``), its `finish` at the end. Every row has the first row's columns; a row with
/// other labels throws. Memory holds one chunk, whatever the rows' number.
public final class ReturnedRowsWriter {
    private let sink: any ByteSink
    private let dateFormat: DateFormat
    /// Made with the columns of the first row.
    private var encoder: RowEncoder?
    private var labels: [String] = []

    /// The rows written so far.
    public private(set) var rowCount = 0

    public init(dateFormat: DateFormat, sink: any ByteSink) {
        self.sink = sink
        self.dateFormat = dateFormat
    }

    /// Writes the rows of one statement's answer.
    public func append(_ result: QueryResult) throws {
        guard !result.rows.isEmpty else { return }
        if self.encoder == nil {
            self.start(columns: result.columns)
        } else if result.columns.count != self.labels.count || !zip(result.columns, self.labels).allSatisfy({ $0.label == $1 }) {
            throw DatabaseError(.unsupported, message: "the statements return rows of other columns than the first row's")
        }
        for values in result.rows {
            try self.encoder!.row(BufferedRow(values: values, children: []), children: [])
            self.rowCount += 1
        }
    }

    /// Closes the array and hands the rest to the sink's `finish`.
    public func finish() throws {
        if self.encoder == nil { self.start(columns: []) }
        try self.encoder!.end()
    }

    private func start(columns: [Column]) {
        var encoder = RowEncoder(
            format: .json(), shape: .array, columns: columns, attachmentKeys: [], dateFormat: self.dateFormat, sink: self.sink)
        encoder.begin()
        self.encoder = consume encoder
        self.labels = columns.map(\.label)
    }
}
