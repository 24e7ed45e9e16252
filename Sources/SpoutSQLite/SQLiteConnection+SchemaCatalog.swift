import SpoutCore

/// SQLite's catalog of the main database: the tables `sqlite_schema` lists (not SQLite's own),
/// with `pragma_table_xinfo` (generated columns included), `pragma_foreign_key_list` and
/// `pragma_index_list`/`pragma_index_info` of each. A single-column `INTEGER PRIMARY KEY` is
/// the rowid: filled by the database when an insert leaves it out, and listed as an index.
/// A foreign key that names no parent column refers to the parent's primary key, and is
/// listed with those columns.
extension SQLiteConnection: SchemaCatalogReading {
    public func schemaTables() throws -> [CatalogTable] {
        let list = try ParsedSQL.cached(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name", dialect: .sqlite)
        let names = try self.queryAll([BoundStatement(list, [])])[0].rows.compactMap { row -> String? in
            guard case .text(let name) = row[0], !name.hasPrefix("spout_") else { return nil }
            return name
        }
        var tables = try names.map(self.table(named:))
        // A key that names no parent column refers to the parent's primary key.
        let primaryKeys = Dictionary(tables.map { ($0.name.lowercased(), $0.primaryKey) }, uniquingKeysWith: { first, _ in first })
        for position in tables.indices {
            for (number, key) in tables[position].foreignKeys.enumerated() where key.referencedColumns.count != key.columns.count {
                tables[position].foreignKeys[number].referencedColumns = primaryKeys[key.referencedTable.lowercased()] ?? []
            }
        }
        return tables
    }

    private func table(named name: String) throws -> CatalogTable {
        let columns = try ParsedSQL.cached(
            "SELECT name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo(:table) WHERE hidden <> 1 ORDER BY cid",
            dialect: .sqlite)
        let keys = try ParsedSQL.cached(
            "SELECT id, \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(:table) ORDER BY id, seq", dialect: .sqlite)
        let indexes = try ParsedSQL.cached(
            """
            SELECT il.name, ii.name FROM pragma_index_list(:table) il, pragma_index_info(il.name) ii
            ORDER BY il.seq, ii.seqno
            """, dialect: .sqlite)
        let arguments: [String: SQLValue] = ["table": .text(name)]
        let results = try self.queryAll([
            BoundStatement(columns, try columns.bind(arguments)), BoundStatement(keys, try keys.bind(arguments)),
            BoundStatement(indexes, try indexes.bind(arguments)),
        ])
        var table = CatalogTable(name: name, columns: [], primaryKey: [], foreignKeys: [], indexes: [])
        var primary: [(position: Int64, name: String)] = []
        for row in results[0].rows {
            guard case .text(let column) = row[0] else { continue }
            var declared = ""
            if case .text(let text) = row[1] { declared = text }
            let generated = row[5] == .integer(2) || row[5] == .integer(3)
            if case .integer(let position) = row[4], position > 0 { primary.append((position, column)) }
            table.columns.append(
                CatalogColumn(
                    name: column, type: SQLiteColumnTypes.type(declared: declared), declaredType: declared,
                    isNotNull: row[2] == .integer(1), isFilledByDatabase: row[3] != .null || generated, isGenerated: generated))
        }
        table.primaryKey = primary.sorted { $0.position < $1.position }.map(\.name)
        if table.primaryKey.count == 1, let position = table.columns.firstIndex(where: { $0.name == table.primaryKey[0] }),
            table.columns[position].declaredType.uppercased() == "INTEGER"
        {
            table.columns[position].isFilledByDatabase = true
            table.indexes.append(table.primaryKey)
        }
        var lastKey: SQLValue?
        for row in results[1].rows {
            guard case .text(let parent) = row[1], case .text(let column) = row[2] else { continue }
            if row[0] != lastKey {
                table.foreignKeys.append(CatalogForeignKey(columns: [], referencedTable: parent, referencedColumns: []))
                lastKey = row[0]
            }
            table.foreignKeys[table.foreignKeys.count - 1].columns.append(column)
            if case .text(let target) = row[3] { table.foreignKeys[table.foreignKeys.count - 1].referencedColumns.append(target) }
        }
        table.indexes += CatalogTable.indexes(
            from: results[2].rows.map { row in
                var column: String?
                if case .text(let text) = row[1] { column = text }
                return (row[0], column)
            })
        return table
    }
}
