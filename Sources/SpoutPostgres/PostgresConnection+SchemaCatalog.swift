import SpoutCore

/// PostgreSQL's catalog, read in one round trip of three queries over `pg_catalog`: the
/// ordinary and partitioned tables of every schema but the system ones (partitions are left to
/// their parent), their live columns, primary and foreign keys, and the key columns of their
/// indexes. A table of a schema that is not on the search path is listed with its schema
/// (``CatalogTable/schema``), and ``CatalogTable/isVisible`` false.
extension PostgresConnection: SchemaCatalogReading {
    public func schemaTables() throws -> [CatalogTable] {
        let results = try self.queryAll([
            BoundStatement(try ParsedSQL.cached(Self.columnsQuery, dialect: .postgres), []),
            BoundStatement(try ParsedSQL.cached(Self.keysQuery, dialect: .postgres), []),
            BoundStatement(try ParsedSQL.cached(Self.indexesQuery, dialect: .postgres), []),
        ])
        var tables: [CatalogTable] = []
        var positions: [TableName: Int] = [:]
        for row in results[0].rows {
            guard case .text(let schema) = row[0], case .text(let name) = row[1], case .text(let column) = row[3],
                case .text(let declared) = row[5]
            else { continue }
            let table = TableName(schema: schema, name: name)
            if positions[table] == nil {
                guard !name.hasPrefix("spout_") else { continue }
                positions[table] = tables.count
                tables.append(CatalogTable(name: name, schema: schema, isVisible: row[2] == .bool(true), columns: [], primaryKey: [], foreignKeys: [], indexes: []))
            }
            var type = ColumnType.text
            var range: ClosedRange<Int64>?
            if case .integer(let oid) = row[4], let exact = UInt32(exactly: oid) {
                type = PostgresColumnDecoder(oid: exact).columnType
                range = Self.integerRanges[exact]
            }
            tables[positions[table]!].columns.append(
                CatalogColumn(
                    name: column, type: type, declaredType: declared, isNotNull: row[6] == .bool(true),
                    isFilledByDatabase: row[7] == .bool(true) || row[8] == .bool(true), isGenerated: row[8] == .bool(true),
                    integerRange: range))
        }
        // One row per key column, in key order; a foreign key's referenced column beside it.
        var keys: [String: (table: Int, kind: String, key: CatalogForeignKey)] = [:]
        var keyOrder: [String] = []
        for row in results[1].rows {
            guard case .text(let schema) = row[0], case .text(let name) = row[1], let position = positions[TableName(schema: schema, name: name)],
                case .text(let kind) = row[2], case .text(let constraint) = row[3], case .text(let column) = row[4]
            else { continue }
            let id = "\(position)\u{0}\(constraint)"
            if keys[id] == nil {
                var referenced = ""
                if case .text(let table) = row[7] { referenced = table }
                keys[id] = (position, kind, CatalogForeignKey(columns: [], referencedTable: referenced, referencedColumns: []))
                keyOrder.append(id)
            }
            keys[id]!.key.columns.append(column)
            if case .text(let target) = row[5] { keys[id]!.key.referencedColumns.append(target) }
        }
        for id in keyOrder {
            let (position, kind, key) = keys[id]!
            if kind == "p" {
                tables[position].primaryKey = key.columns
            } else {
                tables[position].foreignKeys.append(key)
            }
        }
        var indexRows: [Int: [(index: SQLValue, column: String?)]] = [:]
        for row in results[2].rows {
            guard case .text(let schema) = row[0], case .text(let name) = row[1], let position = positions[TableName(schema: schema, name: name)]
            else { continue }
            var column: String?
            if case .text(let text) = row[3] { column = text }
            indexRows[position, default: []].append((row[2], column))
        }
        for (position, rows) in indexRows { tables[position].indexes = CatalogTable.indexes(from: rows) }
        return tables.sorted { ($0.name, $0.schema ?? "") < ($1.name, $1.schema ?? "") }
    }

    /// `int2` (21) and `int4` (23): the integer types narrower than Spout's 64-bit integers.
    private static let integerRanges: [UInt32: ClosedRange<Int64>] = [
        21: Int64(Int16.min)...Int64(Int16.max), 23: Int64(Int32.min)...Int64(Int32.max),
    ]

    private struct TableName: Hashable {
        var schema: String
        var name: String
    }

    private static let userSchemas = "n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'"

    /// schema, table, visible, column, type oid, declared type, not null, default or identity,
    /// generated.
    private static let columnsQuery = """
        SELECT n.nspname::text, c.relname::text, pg_table_is_visible(c.oid), a.attname::text, a.atttypid::int8,
               format_type(a.atttypid, a.atttypmod), a.attnotnull, a.atthasdef OR a.attidentity <> '', a.attgenerated <> ''
        FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
        WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND \(userSchemas)
        ORDER BY n.nspname, c.relname, a.attnum
        """

    /// schema, table, kind (p or f), constraint, column, referenced column, referenced schema,
    /// referenced table: one row per key column, in key order.
    private static let keysQuery = """
        SELECT n.nspname::text, c.relname::text, k.contype::text, k.conname::text, a.attname::text, fa.attname::text,
               rn.nspname::text, r.relname::text
        FROM pg_constraint k
        JOIN pg_class c ON c.oid = k.conrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        CROSS JOIN LATERAL unnest(k.conkey, k.confkey) WITH ORDINALITY AS u(attnum, fattnum, position)
        JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.attnum
        LEFT JOIN pg_attribute fa ON fa.attrelid = k.confrelid AND fa.attnum = u.fattnum
        LEFT JOIN pg_class r ON r.oid = k.confrelid
        LEFT JOIN pg_namespace rn ON rn.oid = r.relnamespace
        WHERE k.contype IN ('p', 'f') AND \(userSchemas)
        ORDER BY n.nspname, c.relname, k.conname, u.position
        """

    /// schema, table, index oid, column (NULL for an expression): one row per key column of
    /// each index, in index order.
    private static let indexesQuery = """
        SELECT n.nspname::text, c.relname::text, i.indexrelid::int8, a.attname::text
        FROM pg_index i
        JOIN pg_class c ON c.oid = i.indrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS u(attnum, position)
        LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = u.attnum AND u.attnum > 0
        WHERE u.position <= i.indnkeyatts AND \(userSchemas)
        ORDER BY n.nspname, c.relname, i.indexrelid, u.position
        """
}
