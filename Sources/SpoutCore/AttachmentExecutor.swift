/// Fetches attached child rows for a window of parent rows, through the connection's
/// ``ChildQueryStrategy`` (one query per window and attachment on PostgreSQL, a cached
/// statement per parent on SQLite), and merges them into their parents.
///
/// A window of one parent (an object or value response) sends the statements of all
/// attachments together (``DatabaseConnection/queryAll(_:)``: one round trip) when the strategy
/// does (``ChildQueryStrategy/sendsSingleParentChildrenTogether``), unless they were run
/// beforehand (`prefetched`: a driver's own read, ``RowStream/write(parent:children:strategy:as:shape:dateFormat:to:)``).
struct AttachmentExecutor {
    /// Nil when every statement was run beforehand (`prefetched`).
    let connection: (any DatabaseConnection)?
    let strategy: any ChildQueryStrategy
    let batchSize: Int
    /// The results of the single-parent statements of the top-level attachments, one per
    /// attachment, already read (``singleParentStatements(_:parent:parentColumns:inherited:strategy:)``).
    let prefetched: [QueryResult]?

    init(connection: any DatabaseConnection, batchSize: Int) {
        self.connection = connection
        self.strategy = connection.childQueries
        self.batchSize = batchSize
        self.prefetched = nil
    }

    init(prefetched: [QueryResult], strategy: any ChildQueryStrategy) {
        self.connection = nil
        self.strategy = strategy
        self.batchSize = 1
        self.prefetched = prefetched
    }

    private func requireConnection() throws -> any DatabaseConnection {
        guard let connection = self.connection else {
            throw DatabaseError(.unsupported, message: "attachments below the prefetched ones need a connection")
        }
        return connection
    }

    /// Fills `children` of every row in `parents` for each of `attachments`, recursively, and
    /// returns the layout of each attachment's rows.
    func fill(
        _ parents: inout [BufferedRow], parentColumns: [Column], attachments: [RowStream.Attachment],
        inherited: [String: SQLValue]
    ) throws -> [AttachmentLayout] {
        var layouts: [AttachmentLayout] = []
        for index in parents.indices { parents[index].children = [] }
        let dialect = self.strategy.dialect
        // One parent: every attachment's statement sent together where the strategy does (or
        // already run, when prefetched).
        var together: [QueryResult]?
        if let prefetched = self.prefetched {
            guard parents.count == 1, prefetched.count == attachments.count else {
                throw DatabaseError(.other, message: "prefetched attachments do not match the parent rows")
            }
            together = prefetched
        } else if self.strategy.sendsSingleParentChildrenTogether && parents.count == 1 {
            together = try self.requireConnection().queryAll(
                try Self.singleParentStatements(
                    attachments, parent: parents[0], parentColumns: parentColumns, inherited: inherited, strategy: self.strategy))
        }
        for (position, attachment) in attachments.enumerated() {
            let arguments = Self.arguments(of: attachment, inherited: inherited)
            let columns: [Column]
            var groups: [[BufferedRow]]
            if let together {
                columns = together[position].columns
                groups = [together[position].rows.map { BufferedRow(values: $0, children: []) }]
            } else {
                (columns, groups) = try self.fetch(
                    try attachment.stream.statement(for: dialect), parents: parents, parentColumns: parentColumns,
                    arguments: arguments)
            }
            var childLayouts: [AttachmentLayout] = []
            if !attachment.stream.attachments.isEmpty && groups.contains(where: { !$0.isEmpty }) {
                // Grandchildren for all children of this window, in windows of their own.
                var flat = groups.flatMap { $0 }
                var start = 0
                let nested = AttachmentExecutor(connection: try self.requireConnection(), batchSize: self.batchSize)
                repeat {
                    let end = min(start + self.batchSize, flat.count)
                    var slice = Array(flat[start..<end])
                    childLayouts = try nested.fill(&slice, parentColumns: columns, attachments: attachment.stream.attachments, inherited: arguments)
                    flat.replaceSubrange(start..<end, with: slice)
                    start = end
                } while start < flat.count
                var offset = 0
                for group in groups.indices {
                    let size = groups[group].count
                    groups[group] = Array(flat[offset..<(offset + size)])
                    offset += size
                }
            }
            layouts.append(AttachmentLayout(
                plan: ObjectPlan.of(columns: columns, attachmentKeys: attachment.stream.attachments.map(\.key)),
                children: childLayouts
            ))
            for index in parents.indices { parents[index].children.append(groups[index]) }
        }
        return layouts
    }

    /// Label indexes made so far, by column list (a request's parents have the columns the
    /// previous request's had).
    private static let labelIndexes = BoundedCache<ColumnListKey, [String: Int]>(capacity: 512)

    /// The first column index of each parent label (children bind parameters by label); made
    /// once per distinct column list, then shared.
    static func labelIndex(_ columns: [Column]) -> [String: Int] {
        Self.labelIndexes.value(for: ColumnListKey(columns)) {
            var index: [String: Int] = [:]
            for (position, column) in columns.enumerated() where index[column.label] == nil {
                index[column.label] = position
            }
            return index
        }
    }

    /// The statement of each of `attachments` for one parent row, as `strategy` sends them
    /// together.
    static func singleParentStatements(
        _ attachments: [RowStream.Attachment], parent: BufferedRow, parentColumns: [Column], inherited: [String: SQLValue],
        strategy: any ChildQueryStrategy
    ) throws -> [BoundStatement] {
        let labels = Self.labelIndex(parentColumns)
        return try attachments.map { attachment in
            let child = try attachment.stream.statement(for: strategy.dialect)
            let arguments = Self.arguments(of: attachment, inherited: inherited)
            let keyNames = child.parameterNames.filter { labels[$0] != nil }
            guard !keyNames.isEmpty else { return BoundStatement(child, try child.bind(arguments)) }
            return try strategy.statement(
                child: child, keyNames: keyNames, keyColumns: keyNames.map { parentColumns[labels[$0]!] },
                keyValues: keyNames.map { parent.values[labels[$0]!] }, arguments: arguments)
        }
    }

    /// Streams the rows of `attachment` for the single `parent` into `encoder`, as elements of
    /// its array (``RowEncoder/element(_:layout:depth:first:)``): read through a cursor that lets
    /// other statements run between its batches, in windows of ``batchSize`` rows, each
    /// window's own attachments filled (one statement per window and attachment, or per row on
    /// SQLite) before it is written. Memory holds one window and its descendants, however many
    /// rows the attachment has.
    /// - Returns: the number of rows written.
    func stream(
        _ attachment: RowStream.Attachment, parent: BufferedRow, parentColumns: [Column], inherited: [String: SQLValue],
        depth: Int?, into encoder: inout RowEncoder
    ) throws -> Int {
        let connection = try self.requireConnection()
        let statement = try Self.singleParentStatements(
            [attachment], parent: parent, parentColumns: parentColumns, inherited: inherited, strategy: self.strategy)[0]
        let arguments = Self.arguments(of: attachment, inherited: inherited)
        let cursor = try connection.query(
            statement.sql, statement.parameters, options: QueryOptions(interleaved: true, batchSize: self.batchSize))
        defer { cursor.close() }
        let columns = cursor.columns
        let width = columns.count
        let plan = ObjectPlan.of(columns: columns, attachmentKeys: attachment.stream.attachments.map(\.key))
        var window: [BufferedRow] = []
        window.reserveCapacity(self.batchSize)
        var count = 0
        var exhausted = false
        while !exhausted {
            window.removeAll(keepingCapacity: true)
            while window.count < self.batchSize {
                guard try cursor.next() else {
                    exhausted = true
                    break
                }
                window.append(BufferedRow(values: (0..<width).map(cursor.value(at:)), children: []))
            }
            if window.isEmpty { break }
            var layout = AttachmentLayout(plan: plan, children: [])
            if !attachment.stream.attachments.isEmpty {
                layout.children = try self.fill(
                    &window, parentColumns: columns, attachments: attachment.stream.attachments, inherited: arguments)
            }
            for row in window {
                try encoder.element(row, layout: layout, depth: depth, first: count == 0)
                count += 1
            }
        }
        return count
    }

    /// The arguments of `attachment`'s statement: its parent's, overridden by its own.
    private static func arguments(of attachment: RowStream.Attachment, inherited: [String: SQLValue]) -> [String: SQLValue] {
        let own = attachment.stream.arguments
        return own.isEmpty ? inherited : inherited.merging(own) { _, own in own }
    }

    /// Runs child `parsed` for every parent; returns the child columns and one group per parent.
    private func fetch(
        _ parsed: ParsedSQL, parents: [BufferedRow], parentColumns: [Column], arguments: [String: SQLValue]
    ) throws -> ([Column], [[BufferedRow]]) {
        let connection = try self.requireConnection()
        let labelIndex = Self.labelIndex(parentColumns)
        let keyNames = parsed.parameterNames.filter { labelIndex[$0] != nil }
        if keyNames.isEmpty {
            // Independent of the parent: run once, share the rows.
            let result = try connection.queryAll([BoundStatement(parsed, try parsed.bind(arguments))])[0]
            let rows = result.rows.map { BufferedRow(values: $0, children: []) }
            return (result.columns, Array(repeating: rows, count: parents.count))
        }
        let indexes = keyNames.map { labelIndex[$0]! }
        let (columns, groups) = try self.strategy.fetch(
            child: parsed, keyNames: keyNames, keyColumns: indexes.map { parentColumns[$0] },
            keyValues: parents.map { parent in indexes.map { parent.values[$0] } }, arguments: arguments, on: connection)
        guard groups.count == parents.count else {
            throw DatabaseError(.other, message: "a child query returned \(groups.count) groups for \(parents.count) parents")
        }
        return (columns, groups.map { rows in rows.map { BufferedRow(values: $0, children: []) } })
    }
}
