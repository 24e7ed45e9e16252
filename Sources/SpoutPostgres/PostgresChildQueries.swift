import SpoutCore

/// PostgreSQL's way to run attached child queries (``ChildQueryStrategy``): a window of
/// parents in one query (``LateralBatch``: the window's keys passed as typed arrays, joined
/// `LATERAL` against the child), and the children of one parent sent together in one round
/// trip, each key parameter cast to its parent column's type (``ParentKeyCast``) so both forms
/// plan and type alike.
public struct PostgresChildQueries: ChildQueryStrategy {
    public init() {}

    public var dialect: SQLDialect { .postgres }

    public var sendsSingleParentChildrenTogether: Bool { true }

    public func statement(
        child: ParsedSQL, keyNames: [String], keyColumns: [Column], keyValues: [SQLValue], arguments: [String: SQLValue]
    ) throws -> BoundStatement {
        let typed = ParentKeyCast.cached(child: child, keyNames: keyNames, keyColumns: keyColumns)
        var bound = arguments
        for (name, value) in zip(keyNames, keyValues) { bound[name] = value }
        return BoundStatement(typed.sql, try typed.sql.bind(bound))
    }

    public func fetch(
        child: ParsedSQL, keyNames: [String], keyColumns: [Column], keyValues: [[SQLValue]], arguments: [String: SQLValue],
        on connection: any DatabaseConnection
    ) throws -> (columns: [Column], groups: [[[SQLValue]]]) {
        let lateral = try LateralBatch.cached(child: child, keyNames: keyNames, keyColumns: keyColumns)
        var bound = arguments
        for position in keyNames.indices {
            bound[lateral.arrayParameterNames[position]] = .array(keyValues.map { $0[position] })
        }
        let cursor = try connection.query(lateral.sql, try lateral.sql.bind(bound), options: QueryOptions())
        defer { cursor.close() }
        let all = cursor.columns
        // Column 0 is the 1-based parent ordinal, the last one the row number within it.
        let columns = Array(all[1..<(all.count - 1)])
        var groups = Array(repeating: [[SQLValue]](), count: keyValues.count)
        while try cursor.next() {
            guard case .integer(let ordinal) = cursor.value(at: 0), ordinal >= 1, ordinal <= keyValues.count else {
                throw DatabaseError(.other, message: "batched child query returned an unexpected parent ordinal")
            }
            groups[Int(ordinal) - 1].append((1..<(all.count - 1)).map(cursor.value(at:)))
        }
        return (columns, groups)
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
struct LateralBatch: Sendable {
    let sql: ParsedSQL
    let arrayParameterNames: [String]

    /// Throws ``SpoutCore/SQLSyntaxError`` only for a child the lexer cannot read, which
    /// parsing it already refused.
    init(child: ParsedSQL, keyNames: [String], keyColumns: [Column]) throws {
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
        // Wrapped in a subquery: without its trailing semicolons (and comments after them).
        for segment in try child.withoutTrailingSemicolons().segments {
            if case .parameter(let name) = segment, let reference = keyReference[name] {
                segments.append(.sql(reference))
            } else {
                segments.append(segment)
            }
        }
        segments.append(.sql("\n) AS \"spout_s\") AS \"spout_c\"\nORDER BY \"spout_k\".\"spout_ord\", \"spout_c\".\"spout_rn\""))
        self.sql = ParsedSQL(segments: segments, dialect: .postgres)
        self.arrayParameterNames = names
    }

    /// The batch built once per child, key names and key types in a process, as
    /// ``ParentKeyCast/cached(child:keyNames:keyColumns:)`` is: every window of a stream, and
    /// every request, binds the same few.
    static func cached(child: ParsedSQL, keyNames: [String], keyColumns: [Column]) throws -> LateralBatch {
        try Self.cache.value(for: ChildQueryKey(child: child, keyNames: keyNames, keyColumns: keyColumns)) {
            try LateralBatch(child: child, keyNames: keyNames, keyColumns: keyColumns)
        }
    }

    private static let cache = BoundedCache<ChildQueryKey, LateralBatch>(capacity: 4096)
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
        self.sql = ParsedSQL(segments: segments, dialect: .postgres)
    }

    /// The cast built once per child, key names and key types in a process: the same few
    /// children are bound for every single-row request.
    static func cached(child: ParsedSQL, keyNames: [String], keyColumns: [Column]) -> ParentKeyCast {
        Self.cache.value(for: ChildQueryKey(child: child, keyNames: keyNames, keyColumns: keyColumns)) {
            ParentKeyCast(child: child, keyNames: keyNames, keyColumns: keyColumns)
        }
    }

    private static let cache = BoundedCache<ChildQueryKey, ParentKeyCast>(capacity: 4096)

    /// The PostgreSQL type of a parent column's values: its own type when it has a plain
    /// name (ASCII letters, digits and `_`: `int4`, `varchar`, ...), else one that holds every
    /// value of its ``ColumnType``. Asked for each child of every single-row request, so the
    /// name is checked byte by byte rather than by Unicode properties.
    static func typeName(of column: Column) -> String {
        if let name = column.databaseTypeName, !name.isEmpty,
            name.utf8.allSatisfy({ ($0 | 0x20) &- UInt8(ascii: "a") < 26 || $0 &- UInt8(ascii: "0") < 10 || $0 == UInt8(ascii: "_") })
        {
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

/// What a child query rewritten for its parents depends on: the child as written (with its
/// parameters' names: two children whose texts differ only in those bind different
/// arguments) and its key parameters' names and types. The key of both rewrites' caches.
private struct ChildQueryKey: Hashable, Sendable {
    let child: String
    let keyNames: [String]
    let keyTypes: [String]

    init(child: ParsedSQL, keyNames: [String], keyColumns: [Column]) {
        self.child = child.source
        self.keyNames = keyNames
        self.keyTypes = keyColumns.map(ParentKeyCast.typeName(of:))
    }
}
