/// A connection that can say what tables its database holds: what `spout init --from` builds a
/// service from, and what the startup checks ask about indexes. Each driver reads its own
/// catalog (PostgreSQL: `pg_catalog`, for the tables of every schema but the system ones; SQLite:
/// `sqlite_schema` and its `pragma_*` functions for the main database).
///
/// Contract:
/// - Only the user's tables: system catalogs, SQLite's own `sqlite_*` tables and Spout's own
///   `spout_*` tables are left out; views are left out (they have no keys to write by).
/// - Tables come in the order of their names (then schemas); columns in the order the table
///   declares them.
/// - Nothing is written and no transaction of the call is left open.
public protocol SchemaCatalogReading: DatabaseConnection {
    /// The user's tables (see the protocol's contract).
    func schemaTables() throws -> [CatalogTable]
}

/// One table as the database's catalog describes it (``SchemaCatalogReading``).
public struct CatalogTable: Sendable, Hashable {
    /// The table's name as the catalog spells it.
    public var name: String
    /// The schema that holds it (PostgreSQL); nil on SQLite.
    public var schema: String?
    /// Whether SQL names it unqualified: its schema is on the connection's search path and no
    /// table of a schema before it has its name (always true on SQLite).
    public var isVisible: Bool
    /// The columns, in their declared order.
    public var columns: [CatalogColumn]
    /// The primary key's columns in key order (empty when the table has none).
    public var primaryKey: [String]
    /// The table's foreign keys.
    public var foreignKeys: [CatalogForeignKey]
    /// The column lists of the table's indexes (the primary key's and unique constraints'
    /// included), each in index order; an index on an expression lists only its plain
    /// columns, up to the first expression.
    public var indexes: [[String]]

    public init(
        name: String, schema: String? = nil, isVisible: Bool = true, columns: [CatalogColumn], primaryKey: [String],
        foreignKeys: [CatalogForeignKey], indexes: [[String]]
    ) {
        self.name = name
        self.schema = schema
        self.isVisible = isVisible
        self.columns = columns
        self.primaryKey = primaryKey
        self.foreignKeys = foreignKeys
        self.indexes = indexes
    }

    /// The column named `name`, if the table has it.
    public func column(_ name: String) -> CatalogColumn? {
        self.columns.first { $0.name == name }
    }

    /// ``indexes`` from a catalog's rows, one per key column of each index, in index order:
    /// `index` tells the indexes apart (rows of one index come together), `column` is nil for
    /// an expression, which ends the plain-column prefix its index lists. An index that
    /// starts with an expression is left out.
    public static func indexes(from rows: [(index: SQLValue, column: String?)]) -> [[String]] {
        var indexes: [[String]] = []
        var current: SQLValue?
        var ended = false
        for row in rows {
            if row.index != current {
                indexes.append([])
                current = row.index
                ended = false
            }
            guard !ended, let column = row.column else {
                ended = true
                continue
            }
            indexes[indexes.count - 1].append(column)
        }
        return indexes.filter { !$0.isEmpty }
    }
}

/// One column of a ``CatalogTable``.
public struct CatalogColumn: Sendable, Hashable {
    /// The column's name as the catalog spells it.
    public var name: String
    /// The value type Spout reads it as.
    public var type: ColumnType
    /// The type as the database declares it (`character varying(20)`, `INTEGER`).
    public var declaredType: String
    /// Whether the column refuses NULL.
    public var isNotNull: Bool
    /// Whether the database fills the column when an insert leaves it out: a default, an
    /// identity or serial column, a generated column, SQLite's `INTEGER PRIMARY KEY` (the
    /// rowid).
    public var isFilledByDatabase: Bool
    /// Whether the database computes the column from others (a generated column): it can be
    /// read, never written.
    public var isGenerated: Bool
    /// The values an integer column can hold when narrower than 64 bits (PostgreSQL's
    /// `smallint` and `integer`); nil otherwise.
    public var integerRange: ClosedRange<Int64>?

    public init(
        name: String, type: ColumnType, declaredType: String, isNotNull: Bool, isFilledByDatabase: Bool, isGenerated: Bool = false,
        integerRange: ClosedRange<Int64>? = nil
    ) {
        self.name = name
        self.type = type
        self.declaredType = declaredType
        self.isNotNull = isNotNull
        self.isFilledByDatabase = isFilledByDatabase
        self.isGenerated = isGenerated
        self.integerRange = integerRange
    }
}

/// A foreign key of a ``CatalogTable``: its `columns` refer to `referencedColumns` of
/// `referencedTable`, pairwise.
public struct CatalogForeignKey: Sendable, Hashable {
    public var columns: [String]
    public var referencedTable: String
    public var referencedColumns: [String]

    public init(columns: [String], referencedTable: String, referencedColumns: [String]) {
        self.columns = columns
        self.referencedTable = referencedTable
        self.referencedColumns = referencedColumns
    }
}

extension Array where Element == CatalogTable {
    /// The first column of every index of these tables, upper-cased (for comparing with names
    /// as SQL text spells them).
    public var leadingIndexColumns: Set<String> {
        var columns = Set<String>()
        for table in self {
            for index in table.indexes {
                if let first = index.first { columns.insert(first.uppercased()) }
            }
        }
        return columns
    }
}
