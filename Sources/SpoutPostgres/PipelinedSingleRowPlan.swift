import SpoutCore

/// A single-row response (an object or a value) planned as pipelined batches of statements that
/// a connection can run without holding a thread (``EventDrivenConnection``): the parent
/// statement, then every attachment's statement for the parent row, sent together as the
/// connection's ``ChildQueryStrategy`` makes them. The rows
/// are then encoded by ``write(_:as:shape:dateFormat:to:)`` exactly as
/// ``RowStream/write(as:shape:to:on:dateFormat:attachmentBatchSize:fetchSize:)`` would write them.
///
/// One round trip instead of two when the children can be foreseen: once the database has
/// answered the parent statement (its columns are remembered, ``parentColumns``), and the request
/// has an argument under each parent label the children bind from (`:employeeNumber` of
/// `/employees/{employeeNumber}`), the children are sent with the parent, as tentative
/// statements built for a parent row holding those arguments. They are used only when the
/// parent row that arrives has the same columns and the same values under those labels, so
/// the statements are the ones the parent row would have produced; otherwise (or when they
/// failed) the children run after the parent as before.
///
/// Only streams whose attachments have no attachments of their own, on a connection whose
/// strategy sends a parent's children together, are planned (``init(_:shape:format:children:)``
/// returns nil otherwise): deeper trees and SQLite go through the cursor path. The parent row and the children are held in memory, as the cursor path
/// holds the children of a single parent.
public struct PipelinedSingleRowPlan: Sendable {
    /// The columns each parent statement answered last, by its SQL text: what the children
    /// are foreseen for. One memo for the process: a statement that answers other columns
    /// elsewhere (another database) only loses the foresight (the columns are checked when the
    /// parent row arrives) and is remembered anew.
    static let parentColumns = BoundedCache<String, [Column]>(capacity: 1024)

    public let stream: RowStream
    /// How the children's statements are made (the connection's).
    private let children: any ChildQueryStrategy
    /// The parent statement (only its first row is kept), with the children as tentative
    /// statements when they can be foreseen.
    public let parent: StatementBatch
    /// The parent statement's SQL text, under which its columns are remembered.
    private let parentText: String
    /// What the tentative children were built for, when there are any.
    private let foreseen: ForeseenParent?

    /// The parent row the tentative children were built for.
    private struct ForeseenParent: Sendable {
        let columns: [Column]
        /// The column indexes the children bind from, and the value assumed at each.
        let keys: [(index: Int, value: SQLValue)]
    }

    /// Nil when the stream is not a single-row stream with flat attachments, when `children`
    /// does not send a parent's children together, or when the stream cannot be written in
    /// `format` (CSV with attachments: the cursor path reports it).
    /// - Parameter children: the connection's ``DatabaseConnection/childQueries``.
    /// - Throws: when the parent statement cannot be parsed or bound.
    public init?(_ stream: RowStream, shape: ResultShape, format: OutputFormat, children: any ChildQueryStrategy) throws {
        guard shape != .array, children.sendsSingleParentChildrenTogether,
            stream.attachments.allSatisfy({ $0.stream.attachments.isEmpty }), format != .csv || stream.attachments.isEmpty
        else { return nil }
        let parsed = try stream.statement(for: children.dialect)
        let statement = BoundStatement(parsed, try parsed.bind(stream.arguments))
        self.stream = stream
        self.children = children
        self.parentText = parsed.text
        if !stream.attachments.isEmpty, let columns = Self.parentColumns[parsed.text],
            let (foreseen, tentative) = Self.foresee(stream, columns: columns, children: children)
        {
            self.foreseen = foreseen
            self.parent = StatementBatch([statement], rowLimit: 1, tentative: tentative)
        } else {
            self.foreseen = nil
            self.parent = StatementBatch([statement], rowLimit: 1)
        }
    }

    /// The children's statements for a parent row with `columns` that holds the stream's
    /// arguments under the labels the children bind from; nil when an argument is missing or
    /// the statements cannot be built.
    private static func foresee(
        _ stream: RowStream, columns: [Column], children strategy: any ChildQueryStrategy
    ) -> (ForeseenParent, [BoundStatement])? {
        let labels = RowStream.labelIndex(columns)
        var keys: [(index: Int, value: SQLValue)] = []
        var values = [SQLValue](repeating: .null, count: columns.count)
        for attachment in stream.attachments {
            guard let child = try? attachment.stream.statement(for: strategy.dialect) else { return nil }
            for name in child.parameterNames {
                guard let index = labels[name], !keys.contains(where: { $0.index == index }) else { continue }
                guard let value = stream.arguments[name] else { return nil }
                keys.append((index, value))
                values[index] = value
            }
        }
        guard let children = try? stream.childStatements(forParent: values, columns: columns, strategy: strategy) else { return nil }
        return (ForeseenParent(columns: columns, keys: keys), children)
    }

    /// The batch to run after `results` (the results of the batches run so far): after the
    /// parent, every attachment's statement bound to the parent row, unless they were
    /// foreseen rightly; then none. Empty also when there is no parent row or no attachment.
    public func batch(after results: [[QueryResult]]) throws -> StatementBatch {
        guard results.count == 1, !self.stream.attachments.isEmpty, let parent = results[0].first else {
            return StatementBatch([])
        }
        let isKnown = Self.parentColumns[self.parentText].map { Column.sameList($0, parent.columns) } ?? false
        if !isKnown { Self.parentColumns.store(parent.columns, for: self.parentText) }
        guard let row = parent.rows.first, self.foreseenChildren(results[0]) == nil else {
            return StatementBatch([])
        }
        return StatementBatch(try self.stream.childStatements(forParent: row, columns: parent.columns, strategy: self.children))
    }

    /// The tentative children's results in `first` (the first batch's results) when they
    /// are the parent row's own: every one arrived, and the parent row has the foreseen
    /// columns and values.
    private func foreseenChildren(_ first: [QueryResult]) -> ArraySlice<QueryResult>? {
        guard let foreseen = self.foreseen, first.count == 1 + self.stream.attachments.count,
            let row = first[0].rows.first, Column.sameList(first[0].columns, foreseen.columns),
            foreseen.keys.allSatisfy({ row[$0.index] == $0.value })
        else { return nil }
        return first.dropFirst()
    }

    /// Encodes the parent row and its children, as read by the batches, into `sink`.
    /// Throws ``RowStreamError/noRow`` when there is no parent row.
    /// - Returns: how the stream ended: one top-level row, and the values of its key labels.
    @discardableResult
    public func write(
        _ results: [[QueryResult]], as format: OutputFormat, shape: ResultShape, dateFormat: DateFormat,
        to sink: any ByteSink
    ) throws -> StreamOutcome {
        guard let parent = results.first?.first else {
            throw DatabaseError(.other, message: "the parent statement returned no result")
        }
        // A parent row without one result per attachment fails in the executor.
        let prefetched = results.count > 1 ? results[1] : self.foreseenChildren(results[0]).map(Array.init) ?? []
        return try self.stream.write(
            parent: parent, children: prefetched, strategy: self.children, as: format, shape: shape, dateFormat: dateFormat, to: sink)
    }
}
