/// Fetches attached child rows for a window of parent rows: one query per window and
/// attachment on PostgreSQL, one cached prepared statement run per parent on SQLite.
///
/// A window of one parent (an object or value response) runs each child statement itself on
/// PostgreSQL, its parent-bound parameters cast to the parent columns' types
/// (``ParentKeyCast``), and sends the statements of all attachments together
/// (``DatabaseConnection/queryAll(_:)``: one round trip), unless they were run beforehand
/// (`prefetched`, see ``SingleRowPlan``).
struct AttachmentExecutor {
    /// Nil when every statement was run beforehand (`prefetched`).
    let connection: (any DatabaseConnection)?
    let dialect: SQLDialect
    let batchSize: Int
    /// The results of the single-parent statements of the top-level attachments, one per
    /// attachment, already read (``singleParentStatements(_:parent:parentColumns:inherited:)``).
    let prefetched: [QueryResult]?

    init(connection: any DatabaseConnection, batchSize: Int) {
        self.connection = connection
        self.dialect = connection.dialect
        self.batchSize = batchSize
        self.prefetched = nil
    }

    init(prefetched: [QueryResult], dialect: SQLDialect) {
        self.connection = nil
        self.dialect = dialect
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
        let dialect = self.dialect
        // One PostgreSQL parent: every attachment's statement as it is, sent together (or
        // already run, when prefetched).
        var together: [QueryResult]?
        if let prefetched = self.prefetched {
            guard parents.count == 1, prefetched.count == attachments.count else {
                throw DatabaseError(.other, message: "prefetched attachments do not match the parent rows")
            }
            together = prefetched
        } else if dialect == .postgres && parents.count == 1 {
            together = try self.requireConnection().queryAll(
                try Self.singleParentStatements(attachments, parent: parents[0], parentColumns: parentColumns, inherited: inherited))
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
                plan: ObjectPlan(labels: columns.map(\.label), attachmentKeys: attachment.stream.attachments.map(\.key)),
                children: childLayouts
            ))
            for index in parents.indices { parents[index].children.append(groups[index]) }
        }
        return layouts
    }

    /// The first column index of each parent label (children bind parameters by label).
    static func labelIndex(_ columns: [Column]) -> [String: Int] {
        var index: [String: Int] = [:]
        for (position, column) in columns.enumerated() where index[column.label] == nil {
            index[column.label] = position
        }
        return index
    }

    /// The statement of each of `attachments` for one PostgreSQL parent row, as the
    /// single-parent path sends them together.
    static func singleParentStatements(
        _ attachments: [RowStream.Attachment], parent: BufferedRow, parentColumns: [Column], inherited: [String: SQLValue]
    ) throws -> [BoundStatement] {
        let labels = Self.labelIndex(parentColumns)
        return try attachments.map { attachment in
            try Self.statement(
                try attachment.stream.statement(for: .postgres), parent: parent, parentColumns: parentColumns,
                labelIndex: labels, arguments: Self.arguments(of: attachment, inherited: inherited))
        }
    }

    /// The arguments of `attachment`'s statement: its parent's, overridden by its own.
    private static func arguments(of attachment: RowStream.Attachment, inherited: [String: SQLValue]) -> [String: SQLValue] {
        let own = attachment.stream.arguments
        return own.isEmpty ? inherited : inherited.merging(own) { _, own in own }
    }

    /// Child `parsed` bound for one PostgreSQL parent: parent-bound parameters cast to the
    /// parent columns' types and bound to its values, the others to `arguments`.
    private static func statement(
        _ parsed: ParsedSQL, parent: BufferedRow, parentColumns: [Column], labelIndex: [String: Int],
        arguments: [String: SQLValue]
    ) throws -> BoundStatement {
        let keyed = parsed.parameterNames.filter { labelIndex[$0] != nil }
        guard !keyed.isEmpty else { return BoundStatement(parsed, try parsed.bind(arguments)) }
        let typed = ParentKeyCast.cached(child: parsed, keyNames: keyed, keyColumns: keyed.map { parentColumns[labelIndex[$0]!] })
        return BoundStatement(typed.sql, try typed.sql.bind { name in labelIndex[name].map { parent.values[$0] } ?? arguments[name] })
    }

    /// Runs child `sql` for every parent; returns the child columns and one group per parent.
    private func fetch(
        _ parsed: ParsedSQL, parents: [BufferedRow], parentColumns: [Column], arguments: [String: SQLValue]
    ) throws -> ([Column], [[BufferedRow]]) {
        let dialect = self.dialect
        let connection = try self.requireConnection()
        let labelIndex = Self.labelIndex(parentColumns)
        let keyed = parsed.parameterNames.filter { labelIndex[$0] != nil }

        if keyed.isEmpty {
            // Independent of the parent: run once, share the rows.
            let (columns, rows) = try self.readAll(parsed, try parsed.bind(arguments))
            return (columns, Array(repeating: rows, count: parents.count))
        }
        switch dialect {
        case .sqlite:
            var groups: [[BufferedRow]] = []
            groups.reserveCapacity(parents.count)
            var columns: [Column] = []
            for parent in parents {
                var bound = arguments
                for name in keyed { bound[name] = parent.values[labelIndex[name]!] }
                let (childColumns, rows) = try self.readAll(parsed, try parsed.bind(bound))
                columns = childColumns
                groups.append(rows)
            }
            return (columns, groups)
        case .postgres:
            let types = keyed.map { name in parentColumns[labelIndex[name]!] }
            let lateral = LateralBatch(child: parsed, keyNames: keyed, keyColumns: types)
            var bound = arguments
            for (position, name) in keyed.enumerated() {
                bound[lateral.arrayParameterNames[position]] = .array(parents.map { $0.values[labelIndex[name]!] })
            }
            let cursor = try connection.query(lateral.sql, try lateral.sql.bind(bound), options: QueryOptions())
            defer { cursor.close() }
            let all = cursor.columns
            // Column 0 is the 1-based parent ordinal, the last one the row number within it.
            let columns = Array(all[1..<(all.count - 1)])
            var groups = Array(repeating: [BufferedRow](), count: parents.count)
            while try cursor.next() {
                guard case .integer(let ordinal) = cursor.value(at: 0), ordinal >= 1, ordinal <= parents.count else {
                    throw DatabaseError(.other, message: "batched child query returned an unexpected parent ordinal")
                }
                groups[Int(ordinal) - 1].append(BufferedRow(values: (1..<(all.count - 1)).map(cursor.value(at:)), children: []))
            }
            return (columns, groups)
        }
    }

    private func readAll(_ sql: ParsedSQL, _ parameters: [SQLValue]) throws -> ([Column], [BufferedRow]) {
        let result = try self.requireConnection().queryAll([BoundStatement(sql, parameters)])[0]
        return (result.columns, result.rows.map { BufferedRow(values: $0, children: []) })
    }
}

/// A PostgreSQL child query rewritten to run for many parents at once:
///
/// ```sql
/// SELECT k.ord, c.* FROM unnest($1::int4[], ...) WITH ORDINALITY AS k(p1, ..., ord)
/// CROSS JOIN LATERAL (SELECT s.*, row_number() OVER () AS rn FROM (<child>) AS s) AS c
/// ORDER BY k.ord, c.rn
/// ```
///
/// where each parent-bound parameter of the child becomes `k.pN`. The child's own order is
/// kept through `row_number()`, and parents come back in window order.
struct LateralBatch {
    let sql: ParsedSQL
    let arrayParameterNames: [String]

    init(child: ParsedSQL, keyNames: [String], keyColumns: [Column]) {
        var segments: [ParsedSQL.Segment] = [.sql("SELECT \"spout_k\".\"spout_ord\", \"spout_c\".* FROM unnest(")]
        var names: [String] = []
        var keyReference: [String: String] = [:]
        for (position, name) in keyNames.enumerated() {
            let arrayName = "spout_keys_\(position + 1)"
            names.append(arrayName)
            keyReference[name] = "\"spout_k\".\"spout_p\(position + 1)\""
            if position > 0 { segments.append(.sql(", ")) }
            segments.append(.parameter(arrayName))
            segments.append(.sql("::\(ParentKeyCast.typeName(of: keyColumns[position]))[]"))
        }
        let aliases = (1...keyNames.count).map { "\"spout_p\($0)\"" }.joined(separator: ", ")
        segments.append(.sql(") WITH ORDINALITY AS \"spout_k\"(\(aliases), \"spout_ord\")\nCROSS JOIN LATERAL (SELECT \"spout_s\".*, row_number() OVER () AS \"spout_rn\" FROM (\n"))
        for segment in Self.trimmed(child.segments) {
            if case .parameter(let name) = segment, let reference = keyReference[name] {
                segments.append(.sql(reference))
            } else {
                segments.append(segment)
            }
        }
        segments.append(.sql("\n) AS \"spout_s\") AS \"spout_c\"\nORDER BY \"spout_k\".\"spout_ord\", \"spout_c\".\"spout_rn\""))
        self.sql = ParsedSQL(rewrittenPostgres: segments)
        self.arrayParameterNames = names
    }

    /// The child's segments without a trailing semicolon (it is wrapped in a subquery).
    private static func trimmed(_ segments: [ParsedSQL.Segment]) -> [ParsedSQL.Segment] {
        var segments = segments
        if case .sql(var last)? = segments.last {
            while let end = last.last, end == ";" || end.isWhitespace { last.removeLast() }
            segments[segments.count - 1] = .sql(last)
        }
        return segments
    }
}

/// A PostgreSQL child query run for a single parent: each parent-bound parameter becomes
/// `CAST(:name AS type)` with the parent column's type, the type the batched form
/// (``LateralBatch``) gives it through its array, so both forms plan and type alike.
struct ParentKeyCast: Sendable {
    let sql: ParsedSQL

    init(child: ParsedSQL, keyNames: [String], keyColumns: [Column]) {
        var types: [String: String] = [:]
        for (name, column) in zip(keyNames, keyColumns) { types[name] = Self.typeName(of: column) }
        var segments: [ParsedSQL.Segment] = []
        segments.reserveCapacity(child.segments.count + 2 * keyNames.count)
        for segment in child.segments {
            if case .parameter(let name) = segment, let type = types[name] {
                segments.append(.sql("CAST("))
                segments.append(segment)
                segments.append(.sql(" AS \(type))"))
            } else {
                segments.append(segment)
            }
        }
        self.sql = ParsedSQL(rewrittenPostgres: segments)
    }

    /// The cast built once per child, key names and key types in a process: the same few
    /// children are bound for every single-row request.
    static func cached(child: ParsedSQL, keyNames: [String], keyColumns: [Column]) -> ParentKeyCast {
        Self.cache.value(for: CacheKey(child: child.text, keyNames: keyNames, keyTypes: keyColumns.map(Self.typeName(of:)))) {
            ParentKeyCast(child: child, keyNames: keyNames, keyColumns: keyColumns)
        }
    }

    private struct CacheKey: Hashable {
        let child: String
        let keyNames: [String]
        let keyTypes: [String]
    }

    private static let cache = BoundedCache<CacheKey, ParentKeyCast>(capacity: 4096)

    /// The PostgreSQL type of a parent column's values: its own type when it has a plain
    /// name (`int4`, `varchar`, ...), else one that holds every value of its ``ColumnType``.
    static func typeName(of column: Column) -> String {
        if let name = column.databaseTypeName, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) {
            return name
        }
        switch column.type {
        case .integer: return "int8"
        case .double: return "float8"
        case .decimal: return "numeric"
        case .bool: return "bool"
        case .date: return "date"
        case .timestamp: return "timestamptz"
        case .time: return "time"
        case .json: return "jsonb"
        case .bytes: return "bytea"
        case .text, .array, .unknown: return "text"
        }
    }
}

extension ParsedSQL {
    /// A PostgreSQL statement built from rewritten segments; its source text spells each
    /// parameter as `:name` again.
    fileprivate init(rewrittenPostgres segments: [Segment]) {
        let source = segments.map { segment -> String in
            switch segment {
            case .sql(let text): return text
            case .parameter(let name): return ":" + name
            }
        }.joined()
        self.init(source: source, dialect: .postgres, segments: segments)
    }
}
